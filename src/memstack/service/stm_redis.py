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
    {prefix}:{<tenant>}:generation         hash         token, count (see below)

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

A dataset can also go back in time under the same ``run_id`` (``DEBUG RELOAD`` of an older
snapshot, a failover behind one address to a replica that lagged). So each tenant has a
generation too, ``{prefix}:{<tenant>}:generation`` (a hash: a token and a count of the
tenant's writes), which every script reads or counts and returns first; a tier whose
answer shows another token, or a lower count than it saw before, raises
``StoreUnavailable`` once (``stm_generation``), which ``TierSync`` treats as the outage it
already survives: every bucket is filled again from the long-term tier. ``clear_tenant``
keeps the generation (a snapshot from before an erasure must still be found older);
``forget_tenant`` drops it too.

The state key lives ``STATE_TTL_S`` after a bucket's last write; a bucket whose state
expired is cold and is filled again on its next read (so a deleted agent's bucket leaves
nothing behind for long).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlsplit

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
from memstack.service.stm_generation import Generation, GenerationWatch
from memstack.service.types import Memory, memory_from_json, memory_to_json

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

__all__ = ["DEFAULT_PREFIX", "STATE_TTL_S", "BucketKeys", "KeyLayout", "RedisTier"]

DEFAULT_PREFIX: Final = "memstack:stm"
STATE_TTL_S: Final = 86_400
_INSTALL = 'RedisTier needs the redis client library: pip install "memstack[redis]"'
_CLEAR_ATTEMPTS = 16

# A script calls run_id() or generation() before any write: it then replicates its writes
# (the run_id and token as written), never itself, which an AOF or a replica would run
# again on another server (Redis 5 and 6 do so by default, 7 always). generation(key,
# writes) returns the tenant's generation (stm_generation): its token, made here when the
# key is missing, and its count of writes, counting this call when it writes.
_GENERATION_LUA = f"""
local function run_id()
  redis.replicate_commands()
  local info = redis.call('INFO', 'server')
  return string.match(info, 'run_id:(%x+)') or error('INFO server shows no run_id')
end
local function generation(key, writes)
  redis.replicate_commands()
  local token = redis.call('HGET', key, 'token')
  if not token then
    local now = redis.call('TIME')
    token = run_id() .. '.' .. now[1] .. '.' .. now[2]
    redis.call('HSET', key, 'token', token)
  end
  local count
  if writes then
    count = redis.call('HINCRBY', key, 'count', 1)
  else
    count = tonumber(redis.call('HGET', key, 'count') or '0')
  end
  redis.call('EXPIRE', key, {STATE_TTL_S})
  return token, count
end
"""

# KEYS = recent, memories, expiry, index, state, generation (see BucketKeys); ARGV[1] =
# the bucket.
_BUCKET_LUA = (
    _GENERATION_LUA
    + f"""
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
)

# ARGV: bucket, max_entries, id, updated_at, json, expires_at or ''. Every script returns
# the generation's token and count first.
_PUT = (
    _BUCKET_LUA
    + """
local token, count = generation(KEYS[6], true)
store(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess > 0 then
  drop(ends(excess, true))
end
bump()
reindex()
return {token, count, excess}
"""
)

# ARGV: bucket, now, limit, max_entries. Returns the epoch ('' when cold, or filled by an
# earlier run of the server), the version (run_id:counter), then the JSON of the newest
# `limit` live entries.
_READ = (
    _BUCKET_LUA
    + """
local server = run_id()
local token, count = generation(KEYS[6], false)
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
local out = {token, count, epoch, server .. ':' .. (state[2] or '0')}
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
local token, count = generation(KEYS[6], true)
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
return {token, count, removed}
"""
)

# ARGV: bucket, epoch or '', expected version or '', then (id, updated_at, json,
# expires_at or '') for each memory to keep. Returns 0 if the version differed.
_REPLACE = (
    _BUCKET_LUA
    + """
local server = run_id()
local token, count = generation(KEYS[6], true)
local version = server .. ':' .. (redis.call('HGET', KEYS[5], 'version') or '0')
if ARGV[3] ~= '' and version ~= ARGV[3] then
  return {token, count, 0}
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
return {token, count, 1}
"""
)

# KEYS: the tenant's generation, its index, then (recent, memories, expiry, state) per
# bucket; ARGV: the buckets read from the index. Returns the generation, then how many
# entries were cleared, or -1 (the caller retries) if the index changed since.
_CLEAR_TENANT = (
    _GENERATION_LUA
    + """
local same = redis.call('SCARD', KEYS[2]) == #ARGV
for _, bucket in ipairs(ARGV) do
  same = same and redis.call('SISMEMBER', KEYS[2], bucket) == 1
end
local token, count = generation(KEYS[1], same)
if not same then return {token, count, -1} end
local cleared = 0
for i = 3, #KEYS, 4 do cleared = cleared + redis.call('ZCARD', KEYS[i]) end
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
return {token, count, cleared}
"""
)

# KEYS: the tenant's generation; ARGV: the token found older. Gives the tenant a new token
# unless another call already did; returns the generation.
_RENEW = (
    _GENERATION_LUA
    + """
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'token')
end
local token, count = generation(KEYS[1], false)
return {token, count}
"""
)


@dataclass(frozen=True, kw_only=True)
class BucketKeys:
    recent: str
    memories: str
    expiry: str
    index: str
    state: str
    generation: str

    def all(self) -> list[str]:
        """In the order the bucket scripts take them."""
        return [self.recent, self.memories, self.expiry, self.index, self.state, self.generation]

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

    def generation(self, tenant: str) -> str:
        return f"{self.tenant(tenant)}:generation"

    def bucket(self, tenant: str, bucket: str) -> BucketKeys:
        base = f"{self.tenant(tenant)}:{_encode(bucket)}"
        return BucketKeys(
            recent=f"{base}:recent",
            memories=f"{base}:memories",
            expiry=f"{base}:expiry",
            index=self.index(tenant),
            state=f"{base}:state",
            generation=self.generation(tenant),
        )


def _encode(part: str) -> str:
    """Percent-encode all but ``A-Z a-z 0-9 _ . - ~``: injective, and no ``:`` ``{`` ``}``
    or glob characters are left."""
    return quote(part, safe="")


_SCRIPTS: Final = {
    "put": _PUT,
    "read": _READ,
    "remove": _REMOVE,
    "replace": _REPLACE,
    "clear": _CLEAR_TENANT,
    "renew": _RENEW,
}


class RedisTier:
    """A ``ShortTermTier`` in Redis (see the module docstring for the layout).

    Pass an open ``redis.Redis`` or ``redis.cluster.RedisCluster`` client (the caller
    closes it), or use ``from_url`` (the tier then owns the client and ``close()`` closes
    it). The client may or may not decode responses.
    """

    def __init__(
        self,
        client: redis.Redis | RedisCluster | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        prefix: str = DEFAULT_PREFIX,
        connect: Callable[[], RedisCluster] | None = None,
    ) -> None:
        """``connect`` instead of ``client``: the client is made at the first call (a
        cluster client reaches its nodes as it is made, which may fail)."""
        _import_redis()
        import redis.exceptions

        self.max_entries = check_max_entries(max_entries)
        if not isinstance(prefix, str) or not prefix:
            raise InvalidInput(
                f"prefix must be a non-empty string, not {prefix!r}.", field="prefix"
            )
        if (client is None) == (connect is None):
            raise InvalidInput("give RedisTier a client or connect, not both or neither.")
        self.keys = KeyLayout(prefix=prefix)
        self._client = client
        self._connect = connect
        self._connecting = threading.Lock()
        self._scripts: dict[str, Any] = {}
        self._owns_client = False
        self._closed = False
        self._errors = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException)
        self._where = _describe(client) if client is not None else "a Redis Cluster"
        self._generations = GenerationWatch()
        if client is not None:
            self._register(client)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 2.0,
        cluster: bool = False,
    ) -> RedisTier:
        """``redis://[[user]:[password]@]host[:port][/db]``, ``rediss://...`` or
        ``unix:///path.sock``; with ``cluster``, a Redis Cluster, the URL naming one of its
        nodes (db 0). Nothing connects until the first call; a server that does not
        answer within ``timeout`` seconds makes calls raise ``StoreUnavailable``.
        """
        _import_redis()
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        options: dict[str, Any] = {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "retry": Retry(NoBackoff(), 1),  # one reconnect (Redis restarted), then fail
        }
        if cluster:
            return cls._cluster_from_url(url, options, max_entries=max_entries, prefix=prefix)
        try:
            client = redis.Redis.from_url(url, **options)
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

    @classmethod
    def _cluster_from_url(
        cls, url: str, options: dict[str, Any], *, max_entries: int, prefix: str
    ) -> RedisTier:
        from redis.cluster import RedisCluster

        parsed = urlsplit(url)
        if parsed.scheme not in ("redis", "rediss") or not parsed.hostname:
            raise ConfigError(
                f"invalid Redis Cluster URL {_redact(url)!r}: name one node of the cluster, "
                "redis://[[user]:[password]@]host[:port] (or rediss://)."
            )
        if parsed.path not in ("", "/", "/0"):
            raise ConfigError(
                f"a Redis Cluster has db 0 only, not {parsed.path.lstrip('/')!r} "
                f"({_redact(url)!r}): drop the /db from the URL."
            )

        def connect() -> RedisCluster:
            return RedisCluster.from_url(url, **options)

        tier = cls(max_entries=max_entries, prefix=prefix, connect=connect)
        tier._where = f"redis://{parsed.hostname}:{parsed.port or 6379} (a cluster node)"
        tier._owns_client = True
        return tier

    def put(self, memory: Memory) -> None:
        keys = self.keys.bucket(memory.tenant, memory.bucket)
        args = [memory.bucket, self.max_entries, *_entry(memory)]
        self._run(memory.tenant, "store a memory", "put", keys.all(), args)

    def recent(
        self, tenant: str, bucket: str, *, now: float, limit: int | None = None
    ) -> list[Memory]:
        return self.read(tenant, bucket, now=now, limit=limit).memories

    def read(self, tenant: str, bucket: str, *, now: float, limit: int | None = None) -> BucketRead:
        count = check_limit(limit, self.max_entries)
        keys = self.keys.bucket(tenant, bucket)
        args: list[str | int] = [bucket, repr(float(now)), count, self.max_entries]
        epoch, version, *rows = self._run(tenant, "read recent memories", "read", keys.all(), args)
        return BucketRead(
            memories=[self._decode(row, keys.memories) for row in rows],
            epoch=_text(epoch) or None,
            version=_text(version),
        )

    def remove(self, tenant: str, bucket: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        keys = self.keys.bucket(tenant, bucket)
        args = [bucket, self.max_entries, *ids]
        (removed,) = self._run(tenant, "remove memories", "remove", keys.all(), args)
        return int(removed)

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
        (replaced,) = self._run(tenant, "replace a bucket", "replace", keys.all(), args)
        return bool(replaced)

    def clear_tenant(self, tenant: str) -> int:
        index = self.keys.index(tenant)
        for _ in range(_CLEAR_ATTEMPTS):
            with self._calling("clear a tenant"):
                buckets = [_text(b) for b in self._connected().smembers(index)]
            keys = [self.keys.generation(tenant), index]
            for bucket in buckets:
                keys.extend(self.keys.bucket(tenant, bucket).own())
            (cleared,) = self._run(tenant, "clear a tenant", "clear", keys, buckets)
            if int(cleared) >= 0:
                return int(cleared)
        raise StoreUnavailable(
            f"Redis at {self._where}: tenant {tenant!r} kept gaining buckets while being "
            f"cleared ({_CLEAR_ATTEMPTS} attempts); stop its writers and retry."
        )

    def forget_tenant(self, tenant: str) -> int:
        """``clear_tenant``, and the tenant's generation too: for a tenant never to be
        written again (a benchmark's throwaway tenant), which then leaves no key."""
        cleared = self.clear_tenant(tenant)
        with self._calling("forget a tenant"):
            self._connected().delete(self.keys.generation(tenant))
        self._generations.forget(tenant)
        return cleared

    def ping(self) -> None:
        with self._calling("answer PING"):
            self._connected().ping()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_client and self._client is not None:
            self._client.close()

    def _run(
        self, tenant: str, action: str, script: str, keys: list[str], args: Sequence[object]
    ) -> list[Any]:
        """Run a script of the tenant's; its answer after the generation it returns
        first. ``StoreUnavailable`` when that generation shows the dataset is not the one
        this tier last saw (``stm_generation``): the write, if any, went into an older
        dataset, and every bucket filled before may be old."""
        before = self._generations.before(tenant)
        with self._calling(action):
            self._connected()
            reply: list[Any] = self._scripts[script](keys=keys, args=args)
        seen = Generation(_text(reply[0]), int(reply[1]))
        verdict = self._generations.after(tenant, before, seen)
        if verdict == "same":
            return reply[2:]
        if verdict == "older":
            key = self.keys.generation(tenant)
            with self._calling("renew a generation"):
                token, count = self._scripts["renew"](keys=[key], args=[seen.token])
            self._generations.adopt(tenant, Generation(_text(token), int(count)))
        assert before is not None  # a first answer is always "same"
        raise StoreUnavailable(
            f"the short-term tier's Redis at {self._where} answered for tenant {tenant!r} "
            f"from another dataset than the one this process last saw (generation "
            f"{before.token}:{before.count}, now {seen.token}:{seen.count}: reloaded, "
            "flushed or failed over without a restart); its buckets are filled again "
            "from the long-term tier."
        )

    def _connected(self) -> redis.Redis | RedisCluster:
        """The client, made now if the tier was given ``connect`` (call it inside
        ``_calling``: making it may fail as any call does)."""
        if self._client is None:
            with self._connecting:
                if self._client is None:
                    assert self._connect is not None
                    client = self._connect()
                    self._register(client)
                    self._client = client
        return self._client

    def _register(self, client: redis.Redis | RedisCluster) -> None:
        self._scripts = {name: client.register_script(lua) for name, lua in _SCRIPTS.items()}

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
