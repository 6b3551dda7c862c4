-- RedissonSpinLock.unlockInnerAsync: release one hold; nobody subscribes
-- to a spin lock, so nothing is published.
-- KEYS[1] lock name, KEYS[2] the unlock latch
--   "redisson_unlock_latch:{name}:<requestId>"
-- ARGV[1] lease in ms for a remaining hold, ARGV[2] the caller's field,
--   ARGV[3] how long the latch lives, in ms
-- Returns the latch's value when this request ran before; else nil when
-- the caller holds nothing, 0 when a reentrant hold remains (lease
-- refreshed), 1 when released (key deleted).
local val = redis.call('get', KEYS[2])
if val ~= false then
    return tonumber(val)
end
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 0, 'px', ARGV[3])
    return 0
else
    redis.call('del', KEYS[1])
    redis.call('set', KEYS[2], 1, 'px', ARGV[3])
    return 1
end
