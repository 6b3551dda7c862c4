-- RedissonLock.tryLockInnerAsync: take or re-enter the lock.
-- KEYS[1] lock name (a hash: field "<clientId>:<threadId>" -> hold count)
-- ARGV[1] lease in ms, ARGV[2] the caller's field "<clientId>:<threadId>"
-- Returns nil when the caller now holds the lock, else the holder's pttl.
if redis.call('exists', KEYS[1]) == 0
    or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
