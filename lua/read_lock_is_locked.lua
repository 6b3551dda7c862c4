-- RedissonReadLock.isLocked: is anyone reading?
-- KEYS[1] the lock name
-- Returns 1 in read mode, or in write mode when the hash holds more than
-- 'mode' and one field (the write holder also holds a read hold), else 0.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == 'read') or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
    return 1
end
return 0
