--[[ delete-executor: remove an executor route from its hash, the global set and its task's set.
KEYS[1] executor hash   KEYS[2] executor id set
ARGV[1] executorId   ARGV[2] key prefix of task executor sets ({p}execs:)   ARGV[3] changes channel
Returns 1 when deleted, 0 when it did not exist. Publishes {kind: route, id, taskId, op: delete}. ]]
local taskId = redis.call('HGET', KEYS[1], 'taskId')
if not taskId then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', ARGV[2] .. taskId, ARGV[1])
redis.call('PUBLISH', ARGV[3], cjson.encode({kind = 'route', id = ARGV[1], taskId = taskId, op = 'delete'}))
return 1
