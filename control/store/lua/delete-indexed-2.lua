--[[ delete-indexed: delete a record key and remove its id from an index set (unit tasks).
KEYS[1] record key   KEYS[2] index set
ARGV[1] id   ARGV[2] changes channel   ARGV[3] StoreChange JSON to publish
Returns 1 when deleted, 0 when the record did not exist. ]]
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
