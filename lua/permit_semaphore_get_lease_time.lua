-- RedissonPermitExpirableSemaphore.getLeaseTimeAsync(permitId): give back
-- the expired permits (publishing the new count), then the permit's lease
-- left.
-- KEYS[1] the semaphore, KEYS[2] its timeout set, KEYS[3] its channel
-- ARGV[1] the id (raw 16 bytes), ARGV[2] 922337203685477 (no lease),
-- ARGV[3] now (wall ms), ARGV[4] the publish command
-- Returns -1 no lease, the ms left, or 0 unknown or expired.
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
    return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3]);
end;
return 0;
