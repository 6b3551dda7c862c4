-- RedissonFairLock.acquireFailedAsync: a waiter gives up (its tryLock wait
-- ran out); it leaves the queue and the waiters behind it move up.
-- KEYS[1] the queue "redisson_lock_queue:{name}",
-- KEYS[2] the timeouts "redisson_lock_timeout:{name}"
-- ARGV[1] the waiter's field "<clientId>:<threadId>", ARGV[2] threadWaitTime
--   in ms (the wait time when > 0, else fairLockWaitTimeout)
-- Returns nothing (nil): every waiter after the leaver gets its timeout
-- lowered by threadWaitTime, then the leaver is removed from both keys.
local queue = redis.call('lrange', KEYS[1], 0, -1)
-- find the waiter in the queue
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
    i = i + 1
end
-- the waiters after it (none when it is not queued)
i = i + 1
while i <= #queue do
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
