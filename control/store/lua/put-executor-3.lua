--[[ put-executor: store an executor route and index it globally and under its task
(moving it out of its previous task's set if its task changed).
KEYS[1] executor hash ({p}exec:<id>)   KEYS[2] executor id set ({p}executors)   KEYS[3] the task's executor set ({p}execs:<taskId>)
ARGV[1] executorId   ARGV[2] taskId   ARGV[3] record JSON (without state/outstanding)   ARGV[4] state   ARGV[5] outstanding
ARGV[6] key prefix of task executor sets ({p}execs:)   ARGV[7] changes channel   ARGV[8] StoreChange JSON to publish
Returns 1. ]]
local old = redis.call('HGET', KEYS[1], 'taskId')
if old and old ~= ARGV[2] then redis.call('SREM', ARGV[6] .. old, ARGV[1]) end
redis.call('HSET', KEYS[1], 'record', ARGV[3], 'taskId', ARGV[2], 'state', ARGV[4], 'outstanding', ARGV[5])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PUBLISH', ARGV[7], ARGV[8])
return 1
