-- RedissonFasterMultiLock.unlockInnerAsync: release one hold of every
-- field.
-- KEYS[1] the group's hash, KEYS[2] its channel, KEYS[3] the unlock latch
-- ARGV[1] the caller's lock name, ARGV[2] the unlock message (0),
--   ARGV[3] the lease in ms, ARGV[4] the publish command, ARGV[5] how
--   long the latch lives in ms, ARGV[6] now (wall clock, ms),
--   ARGV[7..] the fields
-- Returns the latch's value for a repeated request; nil when the hash is
-- gone (the message is published then) or one of the fields was not the
-- caller's live hold (what was the caller's is still released); 1 when
-- the last hold of every field went (message published); 0 when holds
-- remain (their expiry and the hash's TTL raised to the lease).
local val = redis.call('get', KEYS[3]);
if val ~= false then
    return tonumber(val);
end;
if (redis.call('exists', KEYS[1]) == 0) then
    redis.call(ARGV[4], KEYS[2], ARGV[2]);
    return nil;
end;
local lockName = ARGV[1];
local hasFailed = 0;
local allDeleted = 1;
local hasDeleted = 0;
local newExpireTime = tonumber(ARGV[3]) + tonumber(ARGV[6]);
for i = 7, #ARGV, 1 do
    local expireTime = redis.call('hget', KEYS[1], ARGV[i] .. ':' .. lockName .. ':expire_time');
    if (expireTime ~= false and tonumber(expireTime) >= tonumber(ARGV[6])) then
        if (tonumber(redis.call('hincrby', KEYS[1], ARGV[i] .. ':' .. lockName .. ':lock_count', -1)) <= 0) then
            redis.call('hdel', KEYS[1], ARGV[i] .. ':' .. lockName .. ':expire_time');
            redis.call('hdel', KEYS[1], ARGV[i] .. ':' .. lockName .. ':lock_count');
            redis.call('hdel', KEYS[1], ARGV[i]);
            hasDeleted = 1;
        else
            if (tonumber(expireTime) < newExpireTime) then
                redis.call('hset', KEYS[1], ARGV[i] .. ':' .. lockName .. ':expire_time', newExpireTime);
            end;
            allDeleted = 0;
        end;
    else
        allDeleted = 0;
        hasFailed = 1;
    end;
end;
if (hasFailed ~= 0) then
    return nil;
end;
-- As Redisson's: 0 is true in Lua, so this publishes whenever it gets here.
if (hasDeleted) then
    redis.call(ARGV[4], KEYS[2], ARGV[2]);
end;
if (allDeleted == 1) then
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
else
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
    local expireTime = redis.call('pttl', KEYS[1]);
    if (tonumber(ARGV[3]) > tonumber(expireTime)) then
        redis.call('pexpire', KEYS[1], ARGV[3]);
    end;
end;
return allDeleted;
