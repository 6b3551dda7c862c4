-- RedissonReadLock.forceUnlockAsync: delete the lock if it is in read mode.
-- KEYS[1] the lock name, KEYS[2] its channel "redisson_rwlock:{name}"
-- ARGV[1] the unlock message (0, LockPubSub.UNLOCK_MESSAGE), ARGV[2] the
-- publish command
-- Returns 1 when it deleted the lock (and published), 0 when the lock is
-- free or write-locked (nothing changes). The read holds' timeout keys
-- are left to expire.
if (redis.call('hget', KEYS[1], 'mode') == 'read') then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
