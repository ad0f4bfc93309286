--[[ delete-sidecar: remove one sidecar's registration and every chunk entry naming its node, if `instance` holds it
and its lease ends at or before ARGV[3] ('+inf' for a sidecar stopping; now for reaping a crashed one).
KEYS[1] registration ({p}sidecar:<node>)   KEYS[2] lease zset ({p}sidecar-leases)   KEYS[3] chunk expiry zset ({p}chunk-expiry)
ARGV[1] node   ARGV[2] instance   ARGV[3] latest lease removed   ARGV[4] chunk key prefix ({p}chunk:)
ARGV[5] chunk set key prefix ({p}chunks:)   ARGV[6] changes channel
The chunk entries are found by scanning every chunk (O(chunks), only when a sidecar leaves).
Returns the registration's JSON (without its lease) when removed, false otherwise. Publishes a tensor delete per
chunk entry removed and {kind: sidecar, id: node, op: delete}. ]]
local json = redis.call('GET', KEYS[1])
if not json or cjson.decode(json).instance ~= ARGV[2] then return false end
local lease = redis.call('ZSCORE', KEYS[2], ARGV[1])
if lease and ARGV[3] ~= '+inf' and tonumber(lease) > tonumber(ARGV[3]) then return false end
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local key = ARGV[4] .. member
  local chunk = redis.call('GET', key)
  if chunk and cjson.decode(chunk).node == ARGV[1] then
    local id, n = string.match(member, '^(.*):(-?%d+)$')
    redis.call('DEL', key)
    redis.call('SREM', ARGV[5] .. id, n)
    redis.call('ZREM', KEYS[3], member)
    redis.call('PUBLISH', ARGV[6], cjson.encode({kind = 'tensor', id = id, chunk = tonumber(n), op = 'delete'}))
  end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[6], cjson.encode({kind = 'sidecar', id = ARGV[1], op = 'delete'}))
return json
