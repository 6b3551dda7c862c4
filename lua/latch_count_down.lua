-- RedissonCountDownLatch.countDownAsync: one off the count; at zero or below
-- the latch is deleted, and reaching exactly zero publishes ZERO_COUNT_MESSAGE.
-- KEYS[1] the latch, KEYS[2] its channel redisson_countdownlatch__channel__{name}
-- ARGV[1] the zero message (0), ARGV[2] the publish command
-- Returns nothing (nil).
local v = redis.call('decr', KEYS[1]);
if v <= 0 then redis.call('del', KEYS[1]) end;
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;
