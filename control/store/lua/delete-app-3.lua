--[[ delete-app: remove an app, its id from the app set and the names that point to it.
KEYS[1] app hash   KEYS[2] app id set   KEYS[3] name -> id hash
ARGV[1] appId   ARGV[2] changes channel   ARGV[3] StoreChange JSON to publish
Returns 1 when deleted, 0 when the app did not exist. ]]
local names = redis.call('HGET', KEYS[1], 'names')
if not names then return 0 end
for _, name in ipairs(cjson.decode(names)) do
  if redis.call('HGET', KEYS[3], name) == ARGV[1] then redis.call('HDEL', KEYS[3], name) end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
