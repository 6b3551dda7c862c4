-- RedissonSpinLock.forceUnlockAsync: delete the lock whoever holds it;
-- nothing is published.
-- KEYS[1] lock name; no ARGV.
-- Returns 1 when a lock was deleted, else 0.
if (redis.call('del', KEYS[1]) == 1) then
    return 1
else
    return 0
end
