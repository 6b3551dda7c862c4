-- RedissonReadLock.tryLockInnerAsync: take or re-enter a read hold.
-- KEYS[1] the lock name (a hash: 'mode' -> 'read' or 'write', and one
--   field per holder -> its hold count)
-- KEYS[2] the caller's timeout-key prefix,
--   "{name}:<clientId>:<threadId>:rwlock_timeout" (Redisson's
--   getReadWriteTimeoutNamePrefix; "name:..." when the name has a '{')
-- ARGV[1] lease in ms, ARGV[2] the caller's field "<clientId>:<threadId>",
-- ARGV[3] the caller's write field "<clientId>:<threadId>:write"
-- Returns nil when the caller now holds one more read hold, else the
-- lock's pttl. Free, or in read mode: taken. In write mode: taken only by
-- the write holder itself (a write holder may read). Each read hold gets
-- its own key KEYS[2] .. ':' .. <its number>, living for the lease; the
-- hash lives as long as the longest-living hold.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local key = KEYS[2] .. ':' .. ind
    redis.call('set', key, 1)
    redis.call('pexpire', key, ARGV[1])
    local remainTime = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
