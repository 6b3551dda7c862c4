-- RedissonPermitExpirableSemaphore.addPermitsAsync: add (or, negative, take
-- away) permits; only an addition is published (the number added).
-- KEYS[1] the semaphore, KEYS[2] its channel
-- ARGV[1] how many, ARGV[2] the publish command
-- Returns nothing (nil).
local value = redis.call('get', KEYS[1]);
if (value == false) then
    value = 0;
end;
redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1]));
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
end;
