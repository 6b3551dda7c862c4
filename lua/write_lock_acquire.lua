-- RedissonWriteLock.tryLockInnerAsync: take or re-enter the write hold.
-- KEYS[1] the lock name (the read/write hash, see read_lock_acquire.lua)
-- ARGV[1] lease in ms, ARGV[2] the caller's write field
--   "<clientId>:<threadId>:write"
-- Returns nil when the caller now holds the write lock, else the lock's
-- pttl. Only a free lock can be taken (a read holder cannot upgrade), or
-- re-entered by its write holder; a re-entry ADDS the lease to the
-- remaining TTL (pttl + lease), as Redisson does.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if (mode == 'write') then
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
        redis.call('hincrby', KEYS[1], ARGV[2], 1)
        local currentExpire = redis.call('pttl', KEYS[1])
        redis.call('pexpire', KEYS[1], currentExpire + ARGV[1])
        return nil
    end
end
return redis.call('pttl', KEYS[1])
