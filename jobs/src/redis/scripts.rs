//! The Lua scripts that make each queue move atomic on Redis. Every script takes the key
//! prefix as `ARGV[1]` and builds its keys from it (one Redis, no cluster slots), and reads
//! the clock with `TIME` so that instances with skewed clocks agree on what is due.
//!
//! Keys, under prefix `P`:
//! - `P:seq` (ids), `P:order` (position among equal priorities), `P:queues` (a set of
//!   queue names)
//! - `P:job:<id>`: a hash; `q` queue, `x` payload, `p` priority, `a` attempts, `m` max
//!   attempts, `b` backoff (`initial_ms factor max_ms jitter`), `v` visibility ms, `u`
//!   unique key, `s` state (`ready|delayed|running|dead`), `t` lease token, `e` last error,
//!   `d` dead-lettered at (ms)
//! - `P:q:<queue>:ready` (score: priority band then order), `:delayed` (score: due ms),
//!   `:running` (score: lease deadline ms), `:dead` (score: dead-lettered at ms): sorted
//!   sets of ids; `:wake` a short list a dispatch pushes to, which blocked takes BLPOP
//! - `P:u:<queue>:<key>`: the id holding a unique key (`SET NX` semantics, checked against
//!   the job's existence so that a key can never outlive its job)
//! - `P:sched:<entry>:last`, `:fire:<ms>` (one run per fire time, with a TTL), `:running`
//!   (no overlap across instances, with a TTL as a bound when an instance dies mid-run)

/// Functions every queue script starts with.
const PRELUDE: &str = r"
local P = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A time `ms` from now, rounded up so a delay never ends a fraction early.
local function due_after(ms)
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000) + ms
end
-- Scores and times as exact integer strings (tostring would round past 14 digits).
local function int(n) return string.format('%.0f', n) end
local function qkey(q, part) return P .. ':q:' .. q .. ':' .. part end
local function ready(q, id, prio)
  local order = redis.call('INCR', P .. ':order') % 1099511627776
  redis.call('HSET', P .. ':job:' .. id, 's', 'ready')
  redis.call('ZADD', qkey(q, 'ready'), int((1000 - prio) * 1099511627776 + order), id)
  redis.call('RPUSH', qkey(q, 'wake'), '1')
  redis.call('LTRIM', qkey(q, 'wake'), -16, -1)
end
local function release_unique(q, id, u)
  if u and u ~= '' then
    local uk = P .. ':u:' .. q .. ':' .. u
    if redis.call('GET', uk) == id then redis.call('DEL', uk) end
  end
end
local function dead(q, id, now)
  local jk = P .. ':job:' .. id
  redis.call('HSET', jk, 's', 'dead', 'd', int(now), 't', '')
  redis.call('ZADD', qkey(q, 'dead'), int(now), id)
  release_unique(q, id, redis.call('HGET', jk, 'u'))
end
-- Promotes due delayed jobs and expires passed leases (at most 100 of each per call);
-- returns how many expired leases were retried and how many dead-lettered.
local function maintain(q, now)
  local dz = qkey(q, 'delayed')
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', dz, '-inf', int(now), 'LIMIT', 0, 100)) do
    redis.call('ZREM', dz, id)
    local p = redis.call('HGET', P .. ':job:' .. id, 'p')
    if p then ready(q, id, tonumber(p)) end
  end
  local retried, died = 0, 0
  local rz = qkey(q, 'running')
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', rz, '-inf', int(now), 'LIMIT', 0, 100)) do
    redis.call('ZREM', rz, id)
    local jk = P .. ':job:' .. id
    local f = redis.call('HMGET', jk, 'a', 'm', 'v', 'p')
    if f[1] then
      local a, m = tonumber(f[1]), tonumber(f[2])
      redis.call('HSET', jk, 't', '', 'e', 'lease expired: not acknowledged within ' .. f[3] ..
        ' ms (attempt ' .. a .. ' of ' .. m .. ')')
      if a >= m then dead(q, id, now); died = died + 1
      else ready(q, id, tonumber(f[4])); retried = retried + 1 end
    end
  end
  return retried, died
end
-- The job's queue and unique key if `token` is its current lease, else nil.
local function leased(id, token)
  local f = redis.call('HMGET', P .. ':job:' .. id, 's', 't', 'q', 'u')
  if f[1] ~= 'running' or f[2] ~= token then return nil end
  return f[3], f[4]
end
";

/// ARGV: prefix, queue, payload, priority, max attempts, backoff, visibility ms, delay ms,
/// unique key (empty for none). Returns `{id, deduplicated}`.
pub(super) const DISPATCH: &str = r"
local q, u = ARGV[2], ARGV[9]
local uk
if u ~= '' then
  uk = P .. ':u:' .. q .. ':' .. u
  local holder = redis.call('GET', uk)
  if holder and redis.call('EXISTS', P .. ':job:' .. holder) == 1 then return {holder, 1} end
end
local id = int(redis.call('INCR', P .. ':seq'))
local jk = P .. ':job:' .. id
redis.call('HSET', jk, 'q', q, 'x', ARGV[3], 'p', ARGV[4], 'a', 0, 'm', ARGV[5], 'b', ARGV[6],
  'v', ARGV[7], 'u', u)
if uk then redis.call('SET', uk, id) end
redis.call('SADD', P .. ':queues', q)
local delay = tonumber(ARGV[8])
if delay > 0 then
  redis.call('HSET', jk, 's', 'delayed')
  redis.call('ZADD', qkey(q, 'delayed'), int(due_after(delay)), id)
else
  ready(q, id, tonumber(ARGV[4]))
end
return {id, 0}
";

/// ARGV: prefix, lease token, queues... Returns `{id, queue, payload, attempt, max,
/// retried, dead}` or `{'', ms to the next timer or -1, retried, dead}`.
pub(super) const TAKE: &str = r"
local now = now_ms()
local retried, died = 0, 0
for i = 3, #ARGV do
  local r, d = maintain(ARGV[i], now)
  retried = retried + r; died = died + d
end
for i = 3, #ARGV do
  local q = ARGV[i]
  local popped = redis.call('ZPOPMIN', qkey(q, 'ready'))
  if #popped > 0 then
    local id = popped[1]
    local jk = P .. ':job:' .. id
    local a = redis.call('HINCRBY', jk, 'a', 1)
    local f = redis.call('HMGET', jk, 'x', 'm', 'v')
    redis.call('HSET', jk, 's', 'running', 't', ARGV[2])
    redis.call('ZADD', qkey(q, 'running'), int(now + tonumber(f[3])), id)
    return {id, q, f[1], a, tonumber(f[2]), retried, died}
  end
end
local next = -1
for i = 3, #ARGV do
  for _, part in ipairs({'delayed', 'running'}) do
    local first = redis.call('ZRANGE', qkey(ARGV[i], part), 0, 0, 'WITHSCORES')
    if first[2] then
      local wait = tonumber(first[2]) - now
      if wait < 0 then wait = 0 end
      if next < 0 or wait < next then next = wait end
    end
  end
end
return {'', next, retried, died}
";

/// ARGV: prefix, id, token. Returns 1, or 0 when the lease is lost.
pub(super) const ACK: &str = r"
local id = ARGV[2]
local q, u = leased(id, ARGV[3])
if not q then return 0 end
redis.call('ZREM', qkey(q, 'running'), id)
release_unique(q, id, u)
redis.call('DEL', P .. ':job:' .. id)
return 1
";

/// ARGV: prefix, id, token, reason, a random number in [0, 1) for the backoff's jitter.
/// Returns `{'retry', at ms}`, `{'dead', 0}` or `{'lost', 0}`.
pub(super) const FAIL: &str = r"
local id = ARGV[2]
local q = leased(id, ARGV[3])
if not q then return {'lost', 0} end
local now = now_ms()
local jk = P .. ':job:' .. id
redis.call('ZREM', qkey(q, 'running'), id)
redis.call('HSET', jk, 'e', ARGV[4], 't', '')
local f = redis.call('HMGET', jk, 'a', 'm', 'b', 'p')
local a, m = tonumber(f[1]), tonumber(f[2])
if a >= m then dead(q, id, now); return {'dead', 0} end
local initial, factor, max, jitter = string.match(f[3], '(%S+) (%S+) (%S+) (%S+)')
local delay = tonumber(initial) * tonumber(factor) ^ (a - 1)
if delay > tonumber(max) then delay = tonumber(max) end
delay = math.floor(delay * (1 - tonumber(jitter) * tonumber(ARGV[5])))
if delay <= 0 then ready(q, id, tonumber(f[4])); return {'retry', int(now)} end
redis.call('HSET', jk, 's', 'delayed')
local due = due_after(delay)
redis.call('ZADD', qkey(q, 'delayed'), int(due), id)
return {'retry', int(due)}
";

/// ARGV: prefix, id, token, visibility ms. Returns 1, or 0 when the lease is lost.
pub(super) const EXTEND: &str = r"
local id = ARGV[2]
local q = leased(id, ARGV[3])
if not q then return 0 end
redis.call('ZADD', qkey(q, 'running'), 'XX', int(due_after(tonumber(ARGV[4]))), id)
return 1
";

/// ARGV: prefix, queue. Returns `{ready, delayed, running, dead, retried, dead-lettered}`.
pub(super) const COUNTS: &str = r"
local q = ARGV[2]
local r, d = maintain(q, now_ms())
return {redis.call('ZCARD', qkey(q, 'ready')), redis.call('ZCARD', qkey(q, 'delayed')),
  redis.call('ZCARD', qkey(q, 'running')), redis.call('ZCARD', qkey(q, 'dead')), r, d}
";

/// ARGV: prefix, queue, offset, limit. Returns a flat list of `id, payload, attempts,
/// error, dead at` per dead job.
pub(super) const DEAD_LIST: &str = r"
local q = ARGV[2]
local out = {}
local first = tonumber(ARGV[3])
for _, id in ipairs(redis.call('ZRANGE', qkey(q, 'dead'), first, first + tonumber(ARGV[4]) - 1)) do
  local f = redis.call('HMGET', P .. ':job:' .. id, 'x', 'a', 'e', 'd')
  if f[1] then
    table.insert(out, id); table.insert(out, f[1]); table.insert(out, f[2])
    table.insert(out, f[3] or ''); table.insert(out, f[4] or '0')
  end
end
return out
";

/// ARGV: prefix, queue, id. Returns 1, or 0 when no such dead job.
pub(super) const RETRY_DEAD: &str = r"
local q, id = ARGV[2], ARGV[3]
if redis.call('ZREM', qkey(q, 'dead'), id) == 0 then return 0 end
local jk = P .. ':job:' .. id
redis.call('HSET', jk, 'a', 0)
local f = redis.call('HMGET', jk, 'u', 'p')
if f[1] and f[1] ~= '' then
  if not redis.call('SET', P .. ':u:' .. q .. ':' .. f[1], id, 'NX') then
    redis.call('HSET', jk, 'u', '')
  end
end
ready(q, id, tonumber(f[2]))
return 1
";

/// ARGV: prefix, queue, id (empty: up to 1000 of the queue's dead jobs). Returns how many
/// were deleted.
pub(super) const PURGE_DEAD: &str = r"
local q, id = ARGV[2], ARGV[3]
local dz = qkey(q, 'dead')
local ids
if id ~= '' then ids = {id} else ids = redis.call('ZRANGE', dz, 0, 999) end
local n = 0
for _, one in ipairs(ids) do
  if redis.call('ZREM', dz, one) == 1 then
    redis.call('DEL', P .. ':job:' .. one)
    n = n + 1
  end
end
return n
";

/// ARGV: prefix, entry, fire ms, fire lease ms, allow overlap (`1`/`0`), run id, longest
/// run ms. Returns `run`, `taken` (another instance has this fire time) or `overlap`.
pub(super) const SCHEDULE_CLAIM: &str = r"
local base = P .. ':sched:' .. ARGV[2]
if not redis.call('SET', base .. ':fire:' .. ARGV[3], ARGV[6], 'NX', 'PX', ARGV[4]) then
  return 'taken'
end
local last = tonumber(redis.call('GET', base .. ':last') or '0')
if tonumber(ARGV[3]) > last then redis.call('SET', base .. ':last', ARGV[3]) end
if ARGV[5] == '0' then
  if not redis.call('SET', base .. ':running', ARGV[6], 'NX', 'PX', ARGV[7]) then
    return 'overlap'
  end
end
return 'run'
";

/// ARGV: prefix, entry, run id. Ends the entry's run if it is this one.
pub(super) const SCHEDULE_FINISH: &str = r"
local key = P .. ':sched:' .. ARGV[2] .. ':running'
if redis.call('GET', key) == ARGV[3] then redis.call('DEL', key) end
return 1
";

/// A script with the prelude.
pub(super) fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{PRELUDE}{body}"))
}
