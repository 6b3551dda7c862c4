-- RedissonSemaphore.trySetPermitsAsync(permits, timeToLive): set the
-- permits, to expire after timeToLive, when the semaphore does not exist;
-- publish them.
-- KEYS[1] the semaphore, KEYS[2] its channel
-- ARGV[1] the permits, ARGV[2] the publish command, ARGV[3] the time to live (ms)
-- Returns 1 set, 0 it existed.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3]);
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
