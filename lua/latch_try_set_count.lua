-- RedissonCountDownLatch.trySetCountAsync: set the count when the latch does
-- not exist, and publish NEW_COUNT_MESSAGE.
-- KEYS[1] the latch, KEYS[2] its channel
-- ARGV[1] the new-count message (1), ARGV[2] the count, ARGV[3] the publish command
-- Returns 1 set, 0 it existed.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[2]);
    redis.call(ARGV[3], KEYS[2], ARGV[1]);
    return 1
else
    return 0
end
