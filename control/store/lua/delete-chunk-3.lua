--[[ delete-chunk: remove one tensor chunk's metadata and its index entries.
KEYS[1] chunk key ({p}chunk:<id>:<n>)   KEYS[2] the id's chunk set ({p}chunks:<id>)   KEYS[3] expiry zset ({p}chunk-expiry)
ARGV[1] chunk number   ARGV[2] expiry member (<id>:<n>)   ARGV[3] changes channel   ARGV[4] StoreChange JSON to publish
Returns 1 when deleted, 0 when it did not exist. ]]
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
