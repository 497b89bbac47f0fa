"""RedisTier: the short-term tier in Redis, shared by every server process.

redis-py is imported here only, when a tier is made; without it the tier raises
``ConfigError`` naming the extra to install.

Layout (every key built by ``KeyLayout``; tenant and bucket are percent-encoded, so
they never contain ``:`` ``{`` ``}`` and two different pairs never share a key)::

    {prefix}:{<tenant>}:<bucket>:recent    sorted set   memory id -> updated_at
    {prefix}:{<tenant>}:<bucket>:memories  hash         memory id -> memory_to_json(memory)
    {prefix}:{<tenant>}:<bucket>:expiry    sorted set   memory id -> expires_at (TTL'd only)
    {prefix}:{<tenant>}:<bucket>:state     hash         epoch (absent: cold), version, run
    {prefix}:{<tenant>}:buckets            set          the tenant's bucket names (entries or state)

Every write is one Lua script that receives all the keys it touches (the ``{tenant}``
hash tag keeps them in one cluster slot), so each call is atomic: ``put`` stores and
trims in one step, ``read`` prunes expired entries and reads entries and state in one
step (one round trip), ``replace`` checks the version and swaps a whole bucket in one
step, and an id leaves all three structures at once (no orphan hash fields). Every Redis
error becomes ``StoreUnavailable`` naming the server.

A bucket is complete only on the run of the server that filled it: ``replace`` writes the
server's ``run_id`` (``INFO server``: new at every start of ``redis-server``, whatever
it loads) into the state beside the epoch, and ``read`` compares it with the
server's own in the same script. So a Redis restarted in any way (empty, from a whole or
cut AOF, from an RDB snapshot of any age, a replica promoted) holds only cold buckets,
whether or not a client saw it go, whatever is put into them later; and the version a
read returns is ``<run_id>:<counter>``, so a fill that read a bucket before a restart is
refused after it. The scripts replicate their effects, never themselves, so an AOF or a
replica replays the run_id a script wrote instead of asking the new server. The Redis user
needs ``INFO`` (ACL ``+info``).

The state key lives ``STATE_TTL_S`` after a bucket's last write; a bucket whose state
expired is cold and is filled again on its next read (so a deleted agent's bucket leaves
nothing behind for long).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from memstack.errors import ConfigError, InvalidInput, StoreUnavailable
from memstack.service.stm import (
    DEFAULT_MAX_ENTRIES,
    BucketRead,
    check_epoch,
    check_limit,
    check_max_entries,
    check_version,
    latest_by_id,
    newest_first,
)
from memstack.service.types import Memory, memory_from_json, memory_to_json

if TYPE_CHECKING:
    import redis

__all__ = ["DEFAULT_PREFIX", "STATE_TTL_S", "BucketKeys", "KeyLayout", "RedisTier"]

DEFAULT_PREFIX: Final = "memstack:stm"
STATE_TTL_S: Final = 86_400
_INSTALL = 'RedisTier needs the redis client library: pip install "memstack[redis]"'
_CLEAR_ATTEMPTS = 16

# KEYS = recent, memories, expiry, index, state (see BucketKeys); ARGV[1] = the bucket.
# A script calls run_id() before any write: it then replicates its writes (the run_id as
# written), never itself, which an AOF or a replica would run again on another server
# (Redis 5 and 6 do so by default, 7 always).
_BUCKET_LUA = f"""
local function run_id()
  redis.replicate_commands()
  local info = redis.call('INFO', 'server')
  return string.match(info, 'run_id:(%x+)') or error('INFO server shows no run_id')
end
local function bump()
  redis.call('HINCRBY', KEYS[5], 'version', 1)
  redis.call('EXPIRE', KEYS[5], {STATE_TTL_S})
end
local function drop(ids)
  for _, id in ipairs(ids) do
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
  end
end
local function store(id, score, json, expires)
  redis.call('ZADD', KEYS[1], score, id)
  redis.call('HSET', KEYS[2], id, json)
  if expires == '' then
    redis.call('ZREM', KEYS[3], id)
  else
    redis.call('ZADD', KEYS[3], expires, id)
  end
end
-- The n first ids of the tiers' order (updated_at descending, then id ascending), or
-- with oldest the n last ones, last first. A sorted set orders equal scores by member
-- ascending, so each run of equal scores is read again by score, in the order wanted.
local function ends(n, oldest)
  local range = oldest and 'ZRANGE' or 'ZREVRANGE'
  local run = oldest and 'ZREVRANGEBYSCORE' or 'ZRANGEBYSCORE'
  local out, last = {{}}, nil
  local rows = redis.call(range, KEYS[1], 0, n - 1, 'WITHSCORES')
  for i = 2, #rows, 2 do
    if rows[i] ~= last then
      last = rows[i]
      for _, id in ipairs(redis.call(run, KEYS[1], last, last, 'LIMIT', 0, n - #out)) do
        out[#out + 1] = id
      end
    end
  end
  return out
end
local function reindex()
  if redis.call('EXISTS', KEYS[1]) + redis.call('EXISTS', KEYS[5]) > 0 then
    redis.call('SADD', KEYS[4], ARGV[1])
  else
    redis.call('SREM', KEYS[4], ARGV[1])
  end
end
"""

# ARGV: bucket, max_entries, id, updated_at, json, expires_at or ''.
_PUT = (
    _BUCKET_LUA
    + """
store(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess > 0 then
  drop(ends(excess, true))
end
bump()
reindex()
return excess
"""
)

# ARGV: bucket, now, limit, max_entries. Returns the epoch ('' when cold, or filled by an
# earlier run of the server), the version (run_id:counter), then the JSON of the newest
# `limit` live entries.
_READ = (
    _BUCKET_LUA
    + """
local server = run_id()
local before = redis.call('ZCARD', KEYS[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
drop(expired)
if #expired > 0 and before >= tonumber(ARGV[4]) then
  redis.call('HDEL', KEYS[5], 'epoch')
end
reindex()
local state = redis.call('HMGET', KEYS[5], 'epoch', 'version', 'run')
local epoch = state[1] or ''
if state[3] ~= server then
  epoch = ''
end
local out = {epoch, server .. ':' .. (state[2] or '0')}
for _, id in ipairs(ends(tonumber(ARGV[3]), false)) do
  out[#out + 1] = redis.call('HGET', KEYS[2], id)
end
return out
"""
)

# ARGV: bucket, max_entries, id... Returns how many ids were in the bucket.
_REMOVE = (
    _BUCKET_LUA
    + """
local before = redis.call('ZCARD', KEYS[1])
local removed = 0
for i = 3, #ARGV do
  removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
end
bump()
if removed > 0 and before >= tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[5], 'epoch')
end
reindex()
return removed
"""
)

# ARGV: bucket, epoch or '', expected version or '', then (id, updated_at, json,
# expires_at or '') for each memory to keep. Returns 0 if the version differed.
_REPLACE = (
    _BUCKET_LUA
    + """
local server = run_id()
local version = server .. ':' .. (redis.call('HGET', KEYS[5], 'version') or '0')
if ARGV[3] ~= '' and version ~= ARGV[3] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
for i = 4, #ARGV, 4 do
  store(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
end
bump()
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[5], 'epoch')
else
  redis.call('HSET', KEYS[5], 'epoch', ARGV[2], 'run', server)
end
reindex()
return 1
"""
)

# KEYS: the tenant's index, then (recent, memories, expiry, state) per bucket; ARGV: the
# buckets read from the index. Returns -1 (the caller retries) if the index changed since.
_CLEAR_TENANT = """
if redis.call('SCARD', KEYS[1]) ~= #ARGV then return -1 end
for _, bucket in ipairs(ARGV) do
  if redis.call('SISMEMBER', KEYS[1], bucket) == 0 then return -1 end
end
local count = 0
for i = 2, #KEYS, 4 do count = count + redis.call('ZCARD', KEYS[i]) end
for _, key in ipairs(KEYS) do redis.call('DEL', key) end
return count
"""


@dataclass(frozen=True, kw_only=True)
class BucketKeys:
    recent: str
    memories: str
    expiry: str
    index: str
    state: str

    def all(self) -> list[str]:
        """In the order the bucket scripts take them."""
        return [self.recent, self.memories, self.expiry, self.index, self.state]

    def own(self) -> list[str]:
        """The bucket's own keys (all but the tenant's index)."""
        return [self.recent, self.memories, self.expiry, self.state]


@dataclass(frozen=True, kw_only=True)
class KeyLayout:
    """The one place Redis key names are made."""

    prefix: str = DEFAULT_PREFIX

    def tenant(self, tenant: str) -> str:
        return f"{self.prefix}:{{{_encode(tenant)}}}"

    def index(self, tenant: str) -> str:
        return f"{self.tenant(tenant)}:buckets"

    def bucket(self, tenant: str, bucket: str) -> BucketKeys:
        base = f"{self.tenant(tenant)}:{_encode(bucket)}"
        return BucketKeys(
            recent=f"{base}:recent",
            memories=f"{base}:memories",
            expiry=f"{base}:expiry",
            index=self.index(tenant),
            state=f"{base}:state",
        )


def _encode(part: str) -> str:
    """Percent-encode all but ``A-Z a-z 0-9 _ . - ~``: injective, and no ``:`` ``{`` ``}``
    or glob characters are left."""
    return quote(part, safe="")


class RedisTier:
    """A ``ShortTermTier`` in Redis (see the module docstring for the layout).

    Pass an open ``redis.Redis`` client (the caller closes it), or use ``from_url`` (the
    tier then owns the client and ``close()`` closes it). The client may or may not
    decode responses.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        _import_redis()
        import redis.exceptions

        self.max_entries = check_max_entries(max_entries)
        if not isinstance(prefix, str) or not prefix:
            raise InvalidInput(
                f"prefix must be a non-empty string, not {prefix!r}.", field="prefix"
            )
        self.keys = KeyLayout(prefix=prefix)
        self._client = client
        self._owns_client = False
        self._closed = False
        self._errors = redis.exceptions.RedisError
        self._where = _describe(client)
        self._put = client.register_script(_PUT)
        self._read = client.register_script(_READ)
        self._remove = client.register_script(_REMOVE)
        self._replace = client.register_script(_REPLACE)
        self._clear = client.register_script(_CLEAR_TENANT)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 2.0,
    ) -> RedisTier:
        """``redis://[[user]:[password]@]host[:port][/db]``, ``rediss://...`` or
        ``unix:///path.sock``. Nothing connects until the first call; a server that
        does not answer within ``timeout`` seconds makes calls raise ``StoreUnavailable``.
        """
        _import_redis()
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        try:
            client = redis.Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 1),  # one reconnect (Redis restarted), then fail
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"invalid Redis URL {_redact(url)!r}: {exc}. Use "
                "redis://[[user]:[password]@]host[:port][/db] (or rediss://, unix://)."
            ) from exc
        try:
            tier = cls(client, max_entries=max_entries, prefix=prefix)
        except BaseException:
            client.close()
            raise
        tier._owns_client = True
        return tier

    def put(self, memory: Memory) -> None:
        keys = self.keys.bucket(memory.tenant, memory.bucket)
        args = [memory.bucket, self.max_entries, *_entry(memory)]
        with self._calling("store a memory"):
            self._put(keys=keys.all(), args=args)

    def recent(
        self, tenant: str, bucket: str, *, now: float, limit: int | None = None
    ) -> list[Memory]:
        return self.read(tenant, bucket, now=now, limit=limit).memories

    def read(self, tenant: str, bucket: str, *, now: float, limit: int | None = None) -> BucketRead:
        count = check_limit(limit, self.max_entries)
        keys = self.keys.bucket(tenant, bucket)
        args: list[str | int] = [bucket, repr(float(now)), count, self.max_entries]
        with self._calling("read recent memories"):
            epoch, version, *rows = self._read(keys=keys.all(), args=args)
        return BucketRead(
            memories=[self._decode(row, keys.memories) for row in rows],
            epoch=_text(epoch) or None,
            version=_text(version),
        )

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        keys = self.keys.bucket(tenant, bucket)
        with self._calling("remove memories"):
            return int(self._remove(keys=keys.all(), args=[bucket, self.max_entries, *ids]))

    def replace(
        self,
        tenant: str,
        bucket: str,
        memories: Sequence[Memory],
        *,
        epoch: str | None = None,
        if_version: str | None = None,
    ) -> bool:
        kept = newest_first(latest_by_id(memories))[: self.max_entries]
        keys = self.keys.bucket(tenant, bucket)
        args: list[str | float] = [bucket, check_epoch(epoch) or "", check_version(if_version)]
        for memory in kept:
            args.extend(_entry(memory))
        with self._calling("replace a bucket"):
            return bool(self._replace(keys=keys.all(), args=args))

    def clear_tenant(self, tenant: str) -> int:
        index = self.keys.index(tenant)
        with self._calling("clear a tenant"):
            for _ in range(_CLEAR_ATTEMPTS):
                buckets = [_text(b) for b in self._client.smembers(index)]
                keys = [index]
                for bucket in buckets:
                    keys.extend(self.keys.bucket(tenant, bucket).own())
                cleared = int(self._clear(keys=keys, args=buckets))
                if cleared >= 0:
                    return cleared
        raise StoreUnavailable(
            f"Redis at {self._where}: tenant {tenant!r} kept gaining buckets while being "
            f"cleared ({_CLEAR_ATTEMPTS} attempts); stop its writers and retry."
        )

    def ping(self) -> None:
        with self._calling("answer PING"):
            self._client.ping()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            self._client.close()

    @contextmanager
    def _calling(self, action: str) -> Iterator[None]:
        if self._closed:
            raise StoreUnavailable("this RedisTier is closed; open a new one.")
        try:
            yield
        except self._errors as exc:
            raise StoreUnavailable(
                f"the short-term tier's Redis at {self._where} could not {action}: "
                f"{type(exc).__name__}: {exc}. Check that Redis is running and reachable "
                "there and that the URL's password and db are right (MEMSTACK_REDIS_URL)."
            ) from exc

    def _decode(self, row: object, key: str) -> Memory:
        try:
            if not isinstance(row, str | bytes):
                raise TypeError(f"expected a JSON string, got {type(row).__name__}")
            return memory_from_json(row)
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreUnavailable(
                f"Redis at {self._where} holds a damaged entry in {key} ({exc}); "
                f"delete the keys under {self.keys.prefix}: and they are rebuilt on warmup."
            ) from exc


def _entry(memory: Memory) -> list[str | float]:
    """A memory as the scripts take it: id, updated_at, JSON, expires_at or ''."""
    expires = "" if memory.expires_at is None else repr(float(memory.expires_at))
    return [memory.id, repr(float(memory.updated_at)), memory_to_json(memory), expires]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _describe(client: object) -> str:
    """Where the client connects, without credentials."""
    pool = getattr(client, "connection_pool", None)
    kwargs: dict[str, Any] = getattr(pool, "connection_kwargs", {}) or {}
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    host, port = kwargs.get("host", "localhost"), kwargs.get("port", 6379)
    return f"redis://{host}:{port}/{kwargs.get('db', 0)}"


def _redact(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        return f"{scheme}://***@{rest.rpartition('@')[2]}"
    return url


def _import_redis() -> None:
    try:
        import redis  # noqa: F401
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
