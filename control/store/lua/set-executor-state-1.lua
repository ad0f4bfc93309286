--[[ set-executor-state: change the state of an existing executor route.
KEYS[1] executor hash
ARGV[1] executorId   ARGV[2] state   ARGV[3] changes channel
Returns 1 when updated, 0 when the executor does not exist. Publishes {kind: route, id, taskId, op: put}. ]]
local taskId = redis.call('HGET', KEYS[1], 'taskId')
if not taskId then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2])
redis.call('PUBLISH', ARGV[3], cjson.encode({kind = 'route', id = ARGV[1], taskId = taskId, op = 'put'}))
return 1
