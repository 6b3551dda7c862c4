-- RedissonSemaphore.releaseIfExistsAsync: give permits back only when the
-- semaphore exists, publishing the new count.
-- KEYS[1] the semaphore, KEYS[2] its channel
-- ARGV[1] the permits, ARGV[2] the publish command
-- Returns 1 released, 0 it does not exist.
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], value)
return 1
