-- renewal.FastMultilockTask: extend one watchdog-held faster multi-lock.
-- KEYS[1] the group's hash
-- ARGV[1] the lease in ms, ARGV[2] now (wall clock, ms), ARGV[3] the
--   holder's lock name, ARGV[4..] its fields
-- Returns 1 when every field is still the holder's (each expiry raised
-- to now + lease, the hash's TTL to the lease), else 0 (the watchdog
-- stops renewing it).
local leaseTime = tonumber(ARGV[1]);
local currentTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
if (redis.call('exists', KEYS[1]) > 0) then
    local newExpireTime = leaseTime + currentTime;
    for i = 4, #ARGV, 1 do
        local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
        if (lockThread ~= false and lockThread == currentThread) then
            local expireFieldName = ARGV[i] .. ':' .. lockThread .. ':expire_time';
            local expireTime = redis.call('hget', KEYS[1], expireFieldName);
            if (tonumber(expireTime) < newExpireTime) then
                redis.call('hset', KEYS[1], expireFieldName, newExpireTime);
            end;
        else
            return 0;
        end;
    end;
    local expireTime = redis.call('pttl', KEYS[1]);
    if (tonumber(expireTime) < tonumber(leaseTime)) then
        redis.call('pexpire', KEYS[1], leaseTime);
    end;
    return 1;
end;
return 0;
