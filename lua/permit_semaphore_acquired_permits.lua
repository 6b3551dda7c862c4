-- RedissonPermitExpirableSemaphore.acquiredPermitsAsync: give back the
-- expired permits (publishing the new count), then the permits taken.
-- KEYS[1] the semaphore, KEYS[2] its timeout set, KEYS[3] its channel
-- ARGV[1] now (wall ms), ARGV[2] the publish command
-- Returns how many are taken.
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[2], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
    if tonumber(value) > 0 then
        redis.call(ARGV[2], KEYS[3], value);
    end;
end;
local acquired = redis.call('zcount', KEYS[2], 0, '+inf');
return acquired == false and 0 or acquired;
