-- RedissonFairLock.tryLockInnerAsync, the EVAL_NULL_BOOLEAN case (tryLock()
-- with no wait: one attempt, the caller never joins the queue).
-- KEYS[1] lock name (a hash: field "<clientId>:<threadId>" -> hold count),
-- KEYS[2] the queue "redisson_lock_queue:{name}" (a list of fields),
-- KEYS[3] the timeouts "redisson_lock_timeout:{name}" (a zset: field ->
--   the time in ms when that waiter's turn lapses)
-- ARGV[1] lease in ms, ARGV[2] the caller's field, ARGV[3] the current
--   time in ms, ARGV[4] threadWaitTime in ms (the wait time when > 0, else
--   fairLockWaitTimeout)
-- Note the ARGV order differs from fair_lock_acquire.lua (time, wait here).
-- Returns nil when the caller now holds the lock, else 1 (not acquired).
-- First drop waiters at the head of the queue whose timeout has passed.
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
    if firstThreadId2 == false then
        break
    end
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[3]) then
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
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), keys[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
-- Re-entry.
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return 1
