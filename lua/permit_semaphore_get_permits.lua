-- RedissonPermitExpirableSemaphore.getPermitsAsync: give back the expired
-- permits (publishing the new count), then the permits left plus taken.
-- KEYS[1] the semaphore, KEYS[2] its timeout set, KEYS[3] its channel
-- ARGV[1] now (wall ms), ARGV[2] the publish command
-- Returns the total (0 when the semaphore does not exist).
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[2], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
    if tonumber(value) > 0 then
        redis.call(ARGV[2], KEYS[3], value);
    end;
end;
local available = redis.call('get', KEYS[1]);
if available == false then
    return 0
end;
local acquired = redis.call('zcount', KEYS[2], 0, '+inf');
if acquired == false then
    return tonumber(available)
end;
return tonumber(available) + acquired;
