-- One lease of a tenant's GCRA, as quota.GCRA states it.
-- KEYS[1]: the tenant's key (its theoretical arrival time, in microseconds
-- of the server's clock). ARGV: the period (microseconds per token), the
-- burst, the tokens wanted. Returns {granted, wait in microseconds}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local period = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local avail = math.floor((now + burst * period - tat) / period)
local granted = math.max(math.min(want, avail), 0)
tat = tat + granted * period
local wait = 0
if granted < want then wait = math.max(tat + period - burst * period - now, 0) end
if granted > 0 then
	-- Kept while the arrival time is ahead of now; after, it says nothing.
	redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
end
return {granted, math.ceil(wait)}
