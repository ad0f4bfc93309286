--[[ put-app: store an app and index its name and aliases, refusing names another app already uses.
KEYS[1] app hash ({p}app:<id>)   KEYS[2] app id set ({p}apps)   KEYS[3] name -> id hash ({p}app-names)
ARGV[1] appId   ARGV[2] record JSON   ARGV[3] state   ARGV[4] JSON array of the app's names (name + aliases)
ARGV[5] changes channel   ARGV[6] StoreChange JSON to publish
Returns {} when stored, or {name, ownerAppId} when a name belongs to another app (nothing changed). ]]
local names = cjson.decode(ARGV[4])
for _, name in ipairs(names) do
  local owner = redis.call('HGET', KEYS[3], name)
  if owner and owner ~= ARGV[1] then return {name, owner} end
end
local old = redis.call('HGET', KEYS[1], 'names')
if old then
  for _, name in ipairs(cjson.decode(old)) do
    if redis.call('HGET', KEYS[3], name) == ARGV[1] then redis.call('HDEL', KEYS[3], name) end
  end
end
for _, name in ipairs(names) do redis.call('HSET', KEYS[3], name, ARGV[1]) end
redis.call('HSET', KEYS[1], 'record', ARGV[2], 'state', ARGV[3], 'names', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return {}
