-- RedissonPermitExpirableSemaphore.tryReleaseAsync(permitId): remove the
-- permit and give it back, publishing the new count. An expired permit is
-- given back too, but the answer is 0.
-- KEYS[1] the semaphore, KEYS[2] its channel, KEYS[3] its timeout set
-- ARGV[1] the id (raw 16 bytes), ARGV[2] 1, ARGV[3] now (wall ms),
-- ARGV[4] the publish command
-- Returns 1 released, 0 unknown or expired.
local expire = redis.call('zscore', KEYS[3], ARGV[1]);
local removed = redis.call('zrem', KEYS[3], ARGV[1]);
if tonumber(removed) ~= 1 then
    return 0;
end;
local value = redis.call('incrby', KEYS[1], ARGV[2]);
redis.call(ARGV[4], KEYS[2], value);
if tonumber(expire) <= tonumber(ARGV[3]) then
    return 0;
end;
return 1;
