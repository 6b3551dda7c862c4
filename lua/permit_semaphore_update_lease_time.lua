-- RedissonPermitExpirableSemaphore.updateLeaseTimeAsync: give back the
-- expired permits (publishing the new count), then set the permit's new
-- expiry when it is still held.
-- KEYS[1] the semaphore, KEYS[2] its timeout set, KEYS[3] its channel
-- ARGV[1] the id (raw 16 bytes), ARGV[2] the new expiry (wall ms, or
-- 922337203685477), ARGV[3] now, ARGV[4] the publish command
-- Returns 1 updated, 0 not held.
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[2], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
    if tonumber(value) > 0 then
        redis.call(ARGV[4], KEYS[3], value);
    end;
end;
local value = redis.call('zscore', KEYS[2], ARGV[1]);
if (value ~= false) then
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]);
    return 1;
end;
return 0;
