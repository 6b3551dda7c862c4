-- RedissonSemaphore.tryAcquireAsync0: take permits when that many are there.
-- KEYS[1] the semaphore (a string holding the permits left)
-- ARGV[1] how many permits
-- Returns 1 taken, 0 not.
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    local val = redis.call('decrby', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
