-- RedissonReadLock.unlockInnerAsync: release one read hold.
-- KEYS[1] the lock name, KEYS[2] its channel "redisson_rwlock:{name}",
-- KEYS[3] the caller's timeout-key prefix
--   "{name}:<clientId>:<threadId>:rwlock_timeout",
-- KEYS[4] the key prefix every holder's timeout keys start with, "{name}"
--   (the name itself when it has a '{'),
-- KEYS[5] the unlock latch "redisson_unlock_latch:{name}:<requestId>"
-- ARGV[1] the unlock message (0, LockPubSub.UNLOCK_MESSAGE), ARGV[2] the
-- caller's field "<clientId>:<threadId>", ARGV[3] the publish command,
-- ARGV[4] how long the latch lives, in ms
-- Returns nil when the caller holds no read hold (after publishing the
-- message when the lock is gone altogether, as Redisson does), 0 when a
-- hold remains (the hash then lives as long as the longest-living read
-- hold), 1 when released (hash deleted, message sent). The hold's own
-- timeout key is deleted. Other holders whose timeout keys have all
-- expired (holds left by dead clients) do not keep the lock: when no read
-- hold is left alive and the mode is read, the hash is deleted.
local val = redis.call('get', KEYS[5])
if val ~= false then
    return tonumber(val)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    redis.call('set', KEYS[5], 1, 'px', ARGV[4])
    return nil
end
local lockExists = redis.call('hexists', KEYS[1], ARGV[2])
if (lockExists == 0) then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if (counter == 0) then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if (redis.call('hlen', KEYS[1]) > 1) then
    local maxRemainTime = -3
    local keys = redis.call('hkeys', KEYS[1])
    for n, key in ipairs(keys) do
        counter = tonumber(redis.call('hget', KEYS[1], key))
        if type(counter) == 'number' then
            for i = counter, 1, -1 do
                local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i)
                maxRemainTime = math.max(remainTime, maxRemainTime)
            end
        end
    end
    if maxRemainTime > 0 then
        redis.call('pexpire', KEYS[1], maxRemainTime)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
