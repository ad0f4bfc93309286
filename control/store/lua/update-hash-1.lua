--[[ update-hash: set fields of an existing record hash (app state, task state/devices); never creates one.
KEYS[1] record hash
ARGV[1] changes channel   ARGV[2] StoreChange JSON to publish   ARGV[3..] field, value, field, value, ...
Returns 1 when updated, 0 when the hash does not exist. ]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
