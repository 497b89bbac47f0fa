"""Erasing a throwaway benchmark tenant from a PostgreSQL and a Redis that outlive it.

``memstack bench server`` may spawn its server on the user's own PostgreSQL and Redis.
Once that server has stopped, everything its tenant left there goes: every namespace of
the tenant's memories (records, closed versions and the namespace's embedding info),
the tenant's id index, its API key, and its short-term buckets in Redis. The tenant is
``bench-<random>`` and made for one run, so nothing of anyone else's is touched.
"""

from __future__ import annotations

from memstack.service.api_keys import NAMESPACE as KEYS
from memstack.service.ltm import LongTermTier
from memstack.storage import Namespace
from memstack.wiring import open_records

__all__ = ["erase_tenant"]


def erase_tenant(
    tenant: str,
    *,
    key_id: str,
    postgres_url: str | None,
    redis_url: str | None,
) -> dict[str, int]:
    """Erase ``tenant`` and its key ``key_id``; returns what was erased, and ``left``:
    namespaces of the tenant still holding records after."""
    erased: dict[str, int] = {}
    if postgres_url:
        erased |= _erase_records(tenant, key_id, postgres_url)
    if redis_url:
        from memstack.service.stm_redis import RedisTier

        tier = RedisTier.from_url(redis_url)
        try:
            erased["redis_entries"] = tier.forget_tenant(tenant)
        finally:
            tier.close()
    return erased


def _erase_records(tenant: str, key_id: str, url: str) -> dict[str, int]:
    records = open_records(url)
    try:
        prefix = Namespace("mem", tenant).prefix()
        names = {*records.namespaces(prefix), LongTermTier.index_namespace(tenant).encode()}
        removed = sum(records.delete_namespace(name) for name in sorted(names))
        keys = records.delete(KEYS, [key_id])
        left = len(records.namespaces(prefix)) + len(
            records.namespaces(LongTermTier.index_namespace(tenant).encode())
        )
        return {"records": removed, "namespaces": len(names), "keys": keys, "left": left}
    finally:
        records.close()
