-- RedissonSemaphore.addPermitsAsync: add (or, negative, take away) permits,
-- from 0 when the semaphore does not exist; publish the new count.
-- KEYS[1] the semaphore, KEYS[2] its channel
-- ARGV[1] how many, ARGV[2] the publish command
-- Returns nothing (nil).
local value = redis.call('get', KEYS[1]);
if (value == false) then
    value = 0;
end;
redis.call('set', KEYS[1], value + ARGV[1]);
redis.call(ARGV[2], KEYS[2], value + ARGV[1]);
