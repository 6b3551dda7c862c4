-- RedissonExpirable.expireAsync(timeToLive, unit, param, keys...) (also
-- RedissonPermitExpirableSemaphore.expireAsync, on its name and timeout
-- set): set a time to live on every key.
-- KEYS the object's keys
-- ARGV[1] the time to live (ms), ARGV[2] PEXPIRE's option ('' for none)
-- Returns 1 when one key got it, 0 when none exists.
local result = 0;
for j = 1, #KEYS, 1 do
    local expireSet;
    if ARGV[2] ~= '' then
        expireSet = redis.call('pexpire', KEYS[j], ARGV[1], ARGV[2]);
    else
        expireSet = redis.call('pexpire', KEYS[j], ARGV[1]);
    end;
    if expireSet == 1 then
        result = expireSet;
    end;
end;
return result;
