-- RedissonPermitExpirableSemaphore.tryReleaseAsync(permitsIds): when every
-- id is a live permit, give back the expired permits, then release the
-- ids, publishing the counts.
-- KEYS[1] the semaphore, KEYS[2] its channel, KEYS[3] its timeout set
-- ARGV[1] the number of ids, ARGV[2] now (wall ms), ARGV[3] the publish
-- command, ARGV[4...] the ids (raw 16 bytes each)
-- Returns how many were released: 0 when one id is unknown or expired.
for i = 4, #ARGV, 1 do
    local expire = redis.call('zscore', KEYS[3], ARGV[i]);
    if expire== false or tonumber(expire) <= tonumber(ARGV[2]) then
        return 0;
    end;
end;
local expiredIds = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2], 'limit', 0, -1);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[3], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
    if tonumber(value) > 0 then
        redis.call(ARGV[3], KEYS[2], value);
    end;
end;
local keys = {};
for i = 4, #ARGV, 1 do
    table.insert(keys, ARGV[i]);
end;
local removed = redis.call('zrem', KEYS[3], unpack(keys));
redis.call('incrby', KEYS[1], removed);
redis.call(ARGV[3], KEYS[2], removed);
return removed;
