-- RedissonSemaphore.trySetPermitsAsync (also
-- RedissonPermitExpirableSemaphore.trySetPermitsAsync, the same script):
-- set the permits when the semaphore does not exist, publish them.
-- KEYS[1] the semaphore, KEYS[2] its channel
-- ARGV[1] the permits, ARGV[2] the publish command
-- Returns 1 set, 0 it existed.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    redis.call('set', KEYS[1], ARGV[1]);
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
