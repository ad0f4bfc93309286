--[[ patch-autoscale: merge fields into a task's autoscale record in one step (no lost update between the
resource manager's policy changes and its decision records).
KEYS[1] autoscale hash
ARGV[1] task id   ARGV[2] changes channel   ARGV[3] StoreChange JSON to publish   ARGV[4] patch JSON (a null
value removes the field)   ARGV[5] record JSON to start from when there is none, or '' (then nothing is created)
ARGV[6] JSON array of sources whose record is kept unchanged
Returns the record JSON after the patch (unchanged when kept), or false when there is none.
Numbers pass through cjson (14 significant digits: epoch ms and counts are exact). ]]
local json = redis.call('HGET', KEYS[1], ARGV[1])
local record
if json then
  record = cjson.decode(json)
  for _, source in ipairs(cjson.decode(ARGV[6])) do
    if record.source == source then return json end
  end
elseif ARGV[5] ~= '' then
  record = cjson.decode(ARGV[5])
else
  return false
end
for field, value in pairs(cjson.decode(ARGV[4])) do
  if value == cjson.null then record[field] = nil else record[field] = value end
end
local out = cjson.encode(record)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return out
