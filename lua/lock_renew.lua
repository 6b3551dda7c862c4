-- renewal.LockTask: extend many watchdog-held locks in one call.
-- KEYS[i] lock names; ARGV[1] the lease in ms, ARGV[i + 1] the holder's
-- field for KEYS[i].
-- Returns one number per key: 1 renewed, 0 not held any more (the
-- watchdog stops renewing it).
-- pcall: a name that now holds another type is not our lock (0), and
-- must not fail the renewal of the rest of the batch.
local result = {}
for i = 1, #KEYS, 1 do
    if redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        table.insert(result, 1)
    else
        table.insert(result, 0)
    end
end
return result
