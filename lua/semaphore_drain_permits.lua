-- RedissonSemaphore.drainPermitsAsync: take every permit there is.
-- KEYS[1] the semaphore
-- Returns how many were taken (the old value, a string; 0 when none).
local value = redis.call('get', KEYS[1]);
if (value == false) then
    return 0;
end;
redis.call('set', KEYS[1], 0);
return value;
