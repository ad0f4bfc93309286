--[[ renew-sidecar: move a sidecar's lease if `instance` still holds its registration.
KEYS[1] registration ({p}sidecar:<node>)   KEYS[2] lease zset ({p}sidecar-leases)
ARGV[1] node   ARGV[2] instance   ARGV[3] new leaseExpiresAt
Returns 1 when renewed, 0 when the node is not registered by this instance (reaped, or replaced). Publishes nothing. ]]
local json = redis.call('GET', KEYS[1])
if not json or cjson.decode(json).instance ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
