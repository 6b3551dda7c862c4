-- RedissonCountDownLatch.deleteAsync: delete the latch, and publish
-- NEW_COUNT_MESSAGE when it existed.
-- KEYS[1] the latch, KEYS[2] its channel
-- ARGV[1] the new-count message (1), ARGV[2] the publish command
-- Returns 1 deleted, 0 it did not exist.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1
else
    return 0
end
