--[[ take-expired-chunks: atomically remove and return every chunk whose expiresAt <= now.
KEYS[1] expiry zset ({p}chunk-expiry; member "<id>:<n>", score expiresAt)
ARGV[1] now (epoch ms)   ARGV[2] chunk key prefix ({p}chunk:)   ARGV[3] chunk set key prefix ({p}chunks:)   ARGV[4] changes channel
The chunk keys are built here as prefix .. member, mirroring control/store/keys.ts.
Returns the removed chunks' JSON. Publishes {kind: tensor, id, chunk, op: delete} for each. ]]
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local taken = {}
for _, member in ipairs(members) do
  local id, n = string.match(member, '^(.*):(-?%d+)$')
  local key = ARGV[2] .. member
  local json = redis.call('GET', key)
  redis.call('DEL', key)
  redis.call('SREM', ARGV[3] .. id, n)
  redis.call('ZREM', KEYS[1], member)
  if json then
    taken[#taken + 1] = json
    redis.call('PUBLISH', ARGV[4], cjson.encode({kind = 'tensor', id = id, chunk = tonumber(n), op = 'delete'}))
  end
end
return taken
