-- RedissonFairLock.forceUnlockAsync: delete the lock whoever holds it and
-- wake the next waiter in line.
-- KEYS[1] lock name, KEYS[2] the queue "redisson_lock_queue:{name}",
-- KEYS[3] the timeouts "redisson_lock_timeout:{name}",
-- KEYS[4] the channel prefix "redisson_lock__channel:{name}"
-- ARGV[1] the unlock message (0), ARGV[2] the current time in ms,
--   ARGV[3] the publish command
-- Returns 1 when a lock was deleted (the next waiter, if any, is told on
-- "<prefix>:<its field>"), else 0. The queue is left as it is, apart from
-- waiters at its head whose timeout has passed.
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
    if firstThreadId2 == false then
        break
    end
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[2]) then
        redis.call('zrem', KEYS[3], firstThreadId2)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
if (redis.call('del', KEYS[1]) == 1) then
    local nextThreadId = redis.call('lindex', KEYS[2], 0)
    if nextThreadId ~= false then
        redis.call(ARGV[3], KEYS[4] .. ':' .. nextThreadId, ARGV[1])
    end
    return 1
end
return 0
