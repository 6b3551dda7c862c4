-- RedissonFasterMultiLock.tryLockInnerAsync: take every field of the
-- group's hash for the caller, or none.
-- KEYS[1] the group's hash
-- ARGV[1] lease in ms, ARGV[2] now (the caller's wall clock, ms),
--   ARGV[3] the caller's lock name "<clientId>:<threadId>",
--   ARGV[4..] the fields (Redisson's hash of each value)
-- The hash holds, per field F taken by owner O: F = O,
-- "F:O:expire_time" = when O's hold of F ends (wall-clock ms) and
-- "F:O:lock_count" = O's holds of F.
-- Returns nil when taken (each field's expiry raised to now + lease, its
-- count up by one, the hash's TTL raised to the lease); else the ms until
-- the latest-ending hold of another owner on one of the fields ends (0
-- in its last millisecond).
local leaseTime = tonumber(ARGV[1]);
local currentTime = tonumber(ARGV[2]);
local currentThread = ARGV[3];
local maxExpireTime = -1;
local keyExist = nil;
if (tonumber(redis.call('exists', KEYS[1])) > 0) then
    keyExist = 1;
    for i = 4, #ARGV, 1 do
        local lockThread = redis.call('hget', KEYS[1], ARGV[i]);
        if (lockThread ~= false and lockThread ~= currentThread) then
            local expireFieldName = ARGV[i] .. ':' .. lockThread .. ':expire_time';
            local expireTime = redis.call('hget', KEYS[1], expireFieldName);
            -- Not Redisson's "> currentTime": a hold is live through its
            -- last millisecond in every other script (unlock, isLocked,
            -- isHeldByThread), so taking it then let the old holder's
            -- unlock, in that same millisecond, delete the new holder's
            -- field.
            if (expireTime ~= false and tonumber(expireTime) >= currentTime) then
                if (tonumber(expireTime) > maxExpireTime) then
                    maxExpireTime = tonumber(expireTime);
                end;
            end
        end;
    end;
else
    keyExist = 0;
end;
if (maxExpireTime ~= -1) then
    return maxExpireTime - currentTime;
end;
for i = 4, #ARGV, 1 do
    redis.call('hset', KEYS[1], ARGV[i], currentThread);
    local expireFieldName = ARGV[i] .. ':' .. currentThread .. ':expire_time'
    local expireTime = redis.call('hget', KEYS[1], expireFieldName);
    local newExpireTime = leaseTime + currentTime
    if (expireTime == false or tonumber(expireTime) < newExpireTime) then
        redis.call('hset', KEYS[1], expireFieldName, newExpireTime);
    end;
    redis.call('HINCRBY', KEYS[1], ARGV[i] .. ':' .. currentThread .. ':lock_count', 1);
end;
if (keyExist == 1) then
    local expireTime = redis.call('pttl', KEYS[1]);
    -- Not Redisson's "> 0": PTTL answers 0 for a hash with less than a
    -- millisecond left, which a waiter retrying as the last hold ends
    -- meets often; Redisson's script then leaves that TTL, and the fields
    -- just taken vanish with the hash.
    if (tonumber(expireTime) >= 0 and leaseTime > tonumber(expireTime)) then
        redis.call('pexpire', KEYS[1], leaseTime);
    end;
else
    redis.call('pexpire', KEYS[1], leaseTime);
end;
return nil;
