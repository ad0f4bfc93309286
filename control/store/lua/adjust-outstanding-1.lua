--[[ adjust-outstanding: add an integer delta to an existing executor's in-flight count (no notification:
this changes on every request, and routing reads it directly).
KEYS[1] executor hash
ARGV[1] delta (integer)
Returns the new count, or nil (false) when the executor does not exist. ]]
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('HINCRBY', KEYS[1], 'outstanding', ARGV[1])
