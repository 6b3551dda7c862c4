-- RedissonPermitExpirableSemaphore.tryAcquireAsync(ids, timeoutDate): give
-- back up to ARGV[1] expired permits (publishing the new count), then take
-- ARGV[1] permits under the given ids when there are enough.
-- KEYS[1] the semaphore (permits left), KEYS[2] its timeout set
--   ({name}:timeout: raw 16-byte ids scored by expiry), KEYS[3] its channel
-- ARGV[1] how many, ARGV[2] the ids' expiry (wall ms; 922337203685477 for no
--   lease), ARGV[3] now (wall ms), ARGV[4] the no-lease score
--   922337203685477, ARGV[5] the publish command, ARGV[6..] the ids
-- Returns 'OK' taken; else ':<score>', the earliest expiry among the
-- permits taken when it is a lease; else nil.
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[2], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
    if tonumber(value) > 0 then
        redis.call(ARGV[5], KEYS[3], value);
    end;
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    for i = 6, #ARGV, 1 do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]);
    end;
    local ttl = redis.call('pttl', KEYS[1]);
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl);
    end;
    return 'OK';
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil and v[2] ~= ARGV[4] then
    return ':' .. tostring(v[2]);
end
return nil;
