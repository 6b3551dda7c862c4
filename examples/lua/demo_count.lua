-- Demo script: INCRBY KEYS[1] by ARGV[1], returning the new value.
return redis.call('incrby', KEYS[1], ARGV[1])
