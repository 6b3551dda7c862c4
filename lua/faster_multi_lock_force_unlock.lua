-- RedissonFasterMultiLock.forceUnlockAsync: delete the fields whoever
-- holds them.
-- KEYS[1] the group's hash, KEYS[2] its channel
-- ARGV[1] the unlock message (0), ARGV[2] the publish command,
--   ARGV[3..] the fields
-- Returns how many fields were held (Redisson reads it as a boolean:
-- true only for exactly 1). Always publishes.
local removeCount = 0;
for i = 3, #ARGV, 1 do
    local lockName = redis.call('hget', KEYS[1], ARGV[i]);
    local count = redis.call('HDEL', KEYS[1], ARGV[i]);
    -- As Redisson's: a field nobody holds makes lockName false, and the
    -- concatenation below then fails the script.
    redis.call('HDEL', KEYS[1], ARGV[i] .. ':' .. lockName .. ':expire_time');
    redis.call('HDEL', KEYS[1], ARGV[i] .. ':' .. lockName .. ':lock_count');
    removeCount = removeCount + count;
end;
redis.call(ARGV[2], KEYS[2], ARGV[1]);
return removeCount;
