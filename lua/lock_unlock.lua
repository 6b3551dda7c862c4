-- RedissonLock.unlockInnerAsync: release one hold.
-- KEYS[1] lock name, KEYS[2] its channel, KEYS[3] the unlock latch
--   "redisson_unlock_latch:{name}:<requestId>"
-- ARGV[1] the unlock message (0), ARGV[2] lease in ms for a remaining
--   hold, ARGV[3] the caller's field, ARGV[4] the publish command,
--   ARGV[5] how long the latch lives, in ms
-- Returns nil when the caller holds nothing, 0 when a reentrant hold
-- remains (lease refreshed), 1 when released (key deleted, message sent).
-- The latch records the result, so a retry of the same request returns it
-- again instead of releasing a second hold.
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
