-- RedissonFairLock.tryLockInnerAsync, the EVAL_LONG case (lock(), and
-- tryLock(wait, ...)): take the lock in queue order, or join the queue.
-- KEYS[1] lock name (a hash: field "<clientId>:<threadId>" -> hold count),
-- KEYS[2] the queue "redisson_lock_queue:{name}" (a list of fields),
-- KEYS[3] the timeouts "redisson_lock_timeout:{name}" (a zset: field ->
--   the time in ms when that waiter's turn lapses)
-- ARGV[1] lease in ms, ARGV[2] the caller's field, ARGV[3] threadWaitTime
--   in ms (the wait time when > 0, else fairLockWaitTimeout), ARGV[4] the
--   current time in ms
-- Note the ARGV order differs from fair_lock_try_acquire.lua (wait, time).
-- Returns nil when the caller now holds the lock; else a ttl in ms to wait
-- for: max(0, the lock's pttl) when the caller was queued already; when it
-- joins the queue now, the previous waiter's timeout - now (or the lock's
-- pttl when nobody is queued), and its own timeout becomes
-- ttl + threadWaitTime + now.
-- First drop waiters at the head of the queue whose timeout has passed.
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
    if firstThreadId2 == false then
        break
    end
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
        -- NOTE no other timeout is altered
        redis.call('zrem', KEYS[3], firstThreadId2)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
-- Free, and nobody queued or the caller is first in line: take it.
if (redis.call('exists', KEYS[1]) == 0)
    and ((redis.call('exists', KEYS[2]) == 0)
        or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    -- every remaining waiter's turn comes one threadWaitTime sooner
    local keys = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #keys, 1 do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
-- Re-entry.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
-- Already queued: wait for the lock's pttl (Redisson's approximation).
local timeout = redis.call('zscore', KEYS[3], ARGV[2])
if timeout ~= false then
    local ttl = redis.call('pttl', KEYS[1])
    return math.max(0, ttl)
end
-- Join the queue at its end, due one threadWaitTime after the waiter
-- before it (or after the lock's pttl when the queue is empty).
local lastThreadId = redis.call('lindex', KEYS[2], -1)
local ttl
if lastThreadId ~= false and lastThreadId ~= ARGV[2]
    and redis.call('zscore', KEYS[3], lastThreadId) ~= false then
    ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4])
else
    ttl = redis.call('pttl', KEYS[1])
end
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
