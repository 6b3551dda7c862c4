-- RedissonFasterMultiLock.isLockedAsync: any field held by anyone.
-- KEYS[1] the group's hash
-- ARGV[1] now (wall clock, ms), ARGV[2..] the fields
-- Returns 1 when a field has a holder whose hold has not ended, else 0.
local currentTime = tonumber(ARGV[1]);
for i = 2, #ARGV, 1 do
    local localThread = redis.call('hget', KEYS[1], ARGV[i]);
    if (localThread ~= false) then
        local expireTime = redis.call('hget', KEYS[1], ARGV[i] .. ':' .. localThread .. ':expire_time');
        if (expireTime ~= false and tonumber(expireTime) >= currentTime) then
            return 1;
        end;
    end;
end;
return 0;
