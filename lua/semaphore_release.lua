-- RedissonSemaphore.releaseAsync: give permits back, publish the new count.
-- KEYS[1] the semaphore, KEYS[2] its channel redisson_sc:{name}
-- ARGV[1] how many permits, ARGV[2] the publish command
-- Returns nothing (nil).
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);
