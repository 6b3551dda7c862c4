-- RedissonFencedLock.tryLockInnerAsync(waitTime, leaseTime, unit, threadId,
-- command), the override behind the plain RLock calls (lock(), tryLock()):
-- like lock_acquire.lua, but each acquisition also increments the token.
-- KEYS[1] lock name (a hash: field "<clientId>:<threadId>" -> hold count),
-- KEYS[2] the token counter "redisson_lock_token:{name}" (a string)
-- ARGV[1] lease in ms, ARGV[2] the caller's field
-- Returns nil when the caller now holds the lock (the new token is not
-- returned: GET the token key), else the holder's pttl.
if ((redis.call('exists', KEYS[1]) == 0)
    or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
