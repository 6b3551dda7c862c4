-- Test script: returns ARGV[1] + ARGV[2], proving EVALSHA and the EVAL fallback.
return tonumber(ARGV[1]) + tonumber(ARGV[2])
