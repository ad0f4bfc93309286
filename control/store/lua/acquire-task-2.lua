--[[ acquire-task: create a unit task with usage 1, or increment the usage of the existing one.
KEYS[1] task hash ({p}task:<id>)   KEYS[2] task id set ({p}tasks)
ARGV[1] taskId   ARGV[2] record JSON (without state/devices/updatedAt/usage)   ARGV[3] state
ARGV[4] devices JSON   ARGV[5] updatedAt   ARGV[6] changes channel   ARGV[7] StoreChange JSON to publish
Returns {created (1|0), HGETALL of the task hash after the change}. ]]
local created = 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'usage', 1)
else
  redis.call('HSET', KEYS[1], 'record', ARGV[2], 'state', ARGV[3], 'devices', ARGV[4], 'updatedAt', ARGV[5], 'usage', 1)
  redis.call('SADD', KEYS[2], ARGV[1])
  created = 1
end
redis.call('PUBLISH', ARGV[6], ARGV[7])
return {created, redis.call('HGETALL', KEYS[1])}
