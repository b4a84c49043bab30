-- An instance's heartbeat. KEYS[1]: the sorted set of instances, each
-- scored by when it expires (milliseconds of the server's clock). ARGV: the
-- instance's id, its ttl in milliseconds. Returns the instances alive.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- The set lives as long as its longest-lived instance.
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return redis.call('ZCARD', KEYS[1])
