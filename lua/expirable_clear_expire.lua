-- RedissonExpirable.clearExpireAsync(keys...) (RedissonPermitExpirableSemaphore
-- .clearExpireAsync, on its name and timeout set): remove every key's time
-- to live.
-- KEYS the object's keys
-- Returns 1 when one key had one, 0 otherwise.
local result = 0;
for j = 1, #KEYS, 1 do
    local expireSet = redis.call('persist', KEYS[j]);
    if expireSet == 1 then
        result = expireSet;
    end;
end;
return result;
