-- RedissonFasterMultiLock.isHeldByThreadAsync: every field held by the
-- caller.
-- KEYS[1] the group's hash
-- ARGV[1] now (wall clock, ms), ARGV[2] the caller's lock name,
--   ARGV[3..] the fields
-- Returns 1 when the caller's hold of every field has not ended, else 0.
-- As Redisson's, the loop starts at ARGV[4]: the first field is not
-- looked at.
local currentTime = tonumber(ARGV[1]);
local currentThread = ARGV[2];
if (redis.call('exists', KEYS[1]) > 0) then
    for i = 4, #ARGV, 1 do
        local expireTime = redis.call('hget', KEYS[1], ARGV[i] .. ':' .. currentThread .. ':expire_time');
        if (expireTime == false or tonumber(expireTime) < currentTime) then
            return 0;
        end;
    end;
else
    return 0;
end;
return 1;
