--[[ release-task: decrement a unit task's usage, never below 0.
KEYS[1] task hash
ARGV[1] changes channel   ARGV[2] StoreChange JSON to publish
Returns the new usage, or nil (false) when the task does not exist. ]]
local usage = redis.call('HGET', KEYS[1], 'usage')
if not usage then return false end
usage = math.max(0, tonumber(usage) - 1)
redis.call('HSET', KEYS[1], 'usage', usage)
redis.call('PUBLISH', ARGV[1], ARGV[2])
return usage
