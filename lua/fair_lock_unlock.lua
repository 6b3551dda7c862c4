-- RedissonFairLock.unlockInnerAsync: release one hold and wake the next
-- waiter in line on its own channel.
-- KEYS[1] lock name, KEYS[2] the queue "redisson_lock_queue:{name}",
-- KEYS[3] the timeouts "redisson_lock_timeout:{name}",
-- KEYS[4] the channel prefix "redisson_lock__channel:{name}" (the next
--   waiter hears on "<prefix>:<its field>"),
-- KEYS[5] the unlock latch "redisson_unlock_latch:{name}:<requestId>"
-- ARGV[1] the unlock message (0), ARGV[2] lease in ms for a remaining
--   hold, ARGV[3] the caller's field, ARGV[4] the current time in ms,
--   ARGV[5] the publish command, ARGV[6] how long the latch lives, in ms
-- Returns the latch's value when this request ran before; else 1 when the
-- lock does not exist (the next waiter is told anyway), nil when the
-- caller holds nothing, 0 when a reentrant hold remains (lease refreshed),
-- 1 when released (key deleted, next waiter told).
local val = redis.call('get', KEYS[5])
if val ~= false then
    return tonumber(val)
end
-- drop waiters at the head of the queue whose timeout has passed
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
    if firstThreadId2 == false then
        break
    end
    local timeout = redis.call('zscore', KEYS[3], firstThreadId2)
    if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
        redis.call('zrem', KEYS[3], firstThreadId2)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
if (redis.call('exists', KEYS[1]) == 0) then
    local nextThreadId = redis.call('lindex', KEYS[2], 0)
    if nextThreadId ~= false then
        redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1])
    end
    redis.call('set', KEYS[5], 1, 'px', ARGV[6])
    return 1
end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local nextThreadId = redis.call('lindex', KEYS[2], 0)
if nextThreadId ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1])
end
return 1
