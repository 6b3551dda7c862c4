-- RedissonFencedLock.tryLockInnerAsync(leaseTime, unit, threadId), the
-- EVAL_LONG_LIST script behind lockAndGetToken/tryLockAndGetToken: take or
-- re-enter the lock and draw a new fencing token.
-- KEYS[1] lock name (a hash: field "<clientId>:<threadId>" -> hold count),
-- KEYS[2] the token counter "redisson_lock_token:{name}" (a string)
-- ARGV[1] lease in ms, ARGV[2] the caller's field
-- Returns a pair: {-1, token} when the caller now holds the lock (every
-- acquisition, re-entry too, increments the token), else {pttl, -1}
-- with the holder's pttl. (Redisson reads a first element of -1 as
-- acquired, so a holder without expiry, pttl -1, reads as acquired too.)
if (redis.call('exists', KEYS[1]) == 0
    or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
