-- Test script: INCRBY KEYS[1] by ARGV[1] and return the new value, so a test
-- can see that KEYS and ARGV arrive in order and each call runs once.
return redis.call('incrby', KEYS[1], ARGV[1])
