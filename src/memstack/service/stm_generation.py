"""GenerationWatch: whether Redis answers from the dataset this process last wrote to.

A Redis can go back in time without restarting: ``DEBUG RELOAD`` of an older RDB, or a
failover behind one address to a replica that lagged, keeps the server's ``run_id`` and
brings back buckets that look complete. So ``RedisTier`` keeps a *generation* per tenant
in Redis, beside the tenant's buckets (same hash slot): a token, made by the script that
finds the key missing, and a count every write of the tenant adds one to. Every script
returns both; this class remembers the newest pair each tenant has answered with and
judges each answer against the pair remembered *before* the call was sent (a reply to an
earlier call may arrive after a later one's):

- ``same``: the token is the one remembered and the count did not go down;
- ``replaced``: another token (the key was lost, or another process found the dataset
  old and gave it a new token): the answer is adopted, and the caller reports it once;
- ``older``: the same token with a lower count: the dataset is older than one this
  process saw. The caller gives the tenant a new token (so every other process finds
  ``replaced`` at its next call), adopts it and reports it.

A tenant this process has not seen yet has nothing to compare with: its first answer is
adopted. At most ``max_tenants`` tenants are remembered, the least recently used
forgotten first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["DEFAULT_MAX_TENANTS", "Generation", "GenerationWatch", "Verdict"]

DEFAULT_MAX_TENANTS: Final = 100_000
Verdict = Literal["same", "replaced", "older"]


@dataclass(frozen=True)
class Generation:
    """A tenant's generation as one script saw it."""

    token: str
    count: int


class GenerationWatch:
    """The newest generation each tenant answered with (see the module docstring).
    Safe to call from several threads."""

    def __init__(self, *, max_tenants: int = DEFAULT_MAX_TENANTS) -> None:
        self.max_tenants = max_tenants
        self._seen: OrderedDict[str, Generation] = OrderedDict()
        self._lock = threading.Lock()

    def before(self, tenant: str) -> Generation | None:
        """What the tenant's next answer is judged against; take it before the call."""
        with self._lock:
            return self._seen.get(tenant)

    def after(self, tenant: str, before: Generation | None, seen: Generation) -> Verdict:
        """Judge an answer against ``before`` and remember it: the newer count of the
        same token, or ``seen`` itself when it is not ``same``."""
        if before is None or (seen.token == before.token and seen.count >= before.count):
            verdict: Verdict = "same"
        else:
            verdict = "replaced" if seen.token != before.token else "older"
        with self._lock:
            kept = self._seen.get(tenant)
            if verdict == "same" and kept is not None:
                if kept.token != seen.token or seen.count <= kept.count:
                    seen = kept  # a reply to an earlier call, or one already adopted past
            self._remember(tenant, seen)
        return verdict

    def adopt(self, tenant: str, seen: Generation) -> None:
        """Remember ``seen`` as the tenant's generation (a new token this process gave)."""
        with self._lock:
            self._remember(tenant, seen)

    def _remember(self, tenant: str, generation: Generation) -> None:
        """Keep ``generation`` as the tenant's, the most recently used, within
        ``max_tenants``; the caller holds the lock."""
        self._seen[tenant] = generation
        self._seen.move_to_end(tenant)
        while len(self._seen) > self.max_tenants:
            self._seen.popitem(last=False)

    def forget(self, tenant: str) -> None:
        with self._lock:
            self._seen.pop(tenant, None)
