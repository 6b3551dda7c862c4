-- RedissonWriteLock.unlockInnerAsync: release one write hold.
-- KEYS[1] the lock name, KEYS[2] its channel "redisson_rwlock:{name}",
-- KEYS[3] the unlock latch "redisson_unlock_latch:{name}:<requestId>"
-- ARGV[1] the read-unlock message (1, LockPubSub.READ_UNLOCK_MESSAGE: wakes
-- every waiter), ARGV[2] lease in ms for a remaining hold, ARGV[3] the
-- caller's write field "<clientId>:<threadId>:write", ARGV[4] the publish
-- command, ARGV[5] how long the latch lives, in ms
-- Returns nil when the caller holds no write hold (after publishing the
-- message when the lock is gone altogether, as Redisson does), 0 when a
-- reentrant hold remains (lease refreshed), 1 when released: the hash is
-- deleted and the message sent, unless the holder also holds read holds,
-- then the lock just turns to read mode (a downgrade) and NOTHING is
-- published.
local val = redis.call('get', KEYS[3])
if val ~= false then
    return tonumber(val)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return nil
end
if (mode == 'write') then
    local lockExists = redis.call('hexists', KEYS[1], ARGV[3])
    if (lockExists == 0) then
        return nil
    else
        local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
        if (counter > 0) then
            redis.call('pexpire', KEYS[1], ARGV[2])
            redis.call('set', KEYS[3], 0, 'px', ARGV[5])
            return 0
        else
            redis.call('hdel', KEYS[1], ARGV[3])
            if (redis.call('hlen', KEYS[1]) == 1) then
                redis.call('del', KEYS[1])
                redis.call(ARGV[4], KEYS[2], ARGV[1])
            else
                -- has unlocked read-locks
                redis.call('hset', KEYS[1], 'mode', 'read')
            end
            redis.call('set', KEYS[3], 1, 'px', ARGV[5])
            return 1
        end
    end
end
return nil
