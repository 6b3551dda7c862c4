-- RedissonLock.forceUnlockAsync: delete the lock whoever holds it.
-- KEYS[1] lock name, KEYS[2] its channel
-- ARGV[1] the unlock message (0), ARGV[2] the publish command
-- Returns 1 when a lock was deleted (and waiters told), else 0.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
