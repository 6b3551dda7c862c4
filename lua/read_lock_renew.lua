-- renewal.ReadLockTask: extend many watchdog-held read locks in one call.
-- KEYS come in pairs: KEYS[i] a lock name, KEYS[i + 1] its key prefix
--   "{name}" (the name itself when it has a '{')
-- ARGV[1] the lease in ms; then, per pair, the number of this client's
--   holders of that lock, followed by each holder's field
--   "<clientId>:<threadId>"
-- Returns one number per lock: 1 when at least one of the holders still
-- holds it (each alive holder's timeout keys
-- "<prefix>:<field>:rwlock_timeout:<n>", n = its count down to 1, and the
-- hash get the lease), 0 when none does (the watchdog stops renewing it).
local result = {}
local argIdx = 2
for i = 1, #KEYS, 2 do
    local anyAlive = false
    local lockNamesCount = tonumber(ARGV[argIdx])
    argIdx = argIdx + 1
    for k = 1, lockNamesCount do
        local counter = redis.call('hget', KEYS[i], ARGV[argIdx])
        if (counter ~= false) then
            anyAlive = true
            for c = counter, 1, -1 do
                redis.call('pexpire', KEYS[i + 1] .. ':' .. ARGV[argIdx] .. ':rwlock_timeout:' .. c, ARGV[1])
            end
        end
        argIdx = argIdx + 1
    end
    if (anyAlive) then
        redis.call('pexpire', KEYS[i], ARGV[1])
        table.insert(result, 1)
    else
        table.insert(result, 0)
    end
end
return result
