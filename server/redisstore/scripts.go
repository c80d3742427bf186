package redisstore

// luaPrelude is shared by every script. Times are the Redis server's, in
// milliseconds. A completion's arguments are five consecutive ARGV
// entries: status, encoded header, body, resource id, retention in ms; the
// expiry index is always the last key.
const luaPrelude = `
local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function owns(rec, token)
	if token == '' then return false end
	local f = redis.call('HMGET', rec, 'state', 'token')
	return f[1] == 'reserved' and f[2] == token
end

local function complete(rec, i)
	local expires = now_ms() + tonumber(ARGV[i + 4])
	redis.call('HDEL', rec, 'token', 'lease')
	redis.call('HSET', rec, 'state', 'completed', 'status', ARGV[i], 'header', ARGV[i + 1],
		'body', ARGV[i + 2], 'rid', ARGV[i + 3], 'expires', expires)
	redis.call('PEXPIREAT', rec, expires)
	redis.call('ZADD', KEYS[#KEYS], expires, rec)
end
`

// reserveLua: KEYS[1] record, KEYS[2] expiry index; ARGV token, lease
// ms, fingerprint, grace ms. Returns {'reserved'} or {'existing', field,
// value, …}. A reservation expires, and is indexed as due, at the end of
// its lease plus the grace. The record holds only what a replay or a
// takeover reads: the scope and key are in the record's name already.
const reserveLua = luaPrelude + `
local rec = KEYS[1]
local now = now_ms()
local f = redis.call('HMGET', rec, 'state', 'lease', 'fp', 'expires')
local free = true
if f[1] == 'reserved' then
	free = tonumber(f[2]) <= now and f[3] == ARGV[3]
elseif f[1] == 'completed' then
	free = tonumber(f[4]) <= now
end
if not free then
	local out = redis.call('HGETALL', rec)
	table.insert(out, 1, 'existing')
	return out
end
local lease = now + tonumber(ARGV[2])
if f[1] then redis.call('DEL', rec) end
redis.call('HSET', rec, 'state', 'reserved', 'token', ARGV[1], 'lease', lease, 'fp', ARGV[3], 'created', now)
local due = lease + tonumber(ARGV[4])
redis.call('PEXPIREAT', rec, due)
redis.call('ZADD', KEYS[2], due, rec)
return {'reserved'}
`

// completeLua: KEYS[1] record, KEYS[2] expiry index; ARGV token, then a completion. Returns 1,
// or 0 when the token does not own the record.
const completeLua = luaPrelude + `
if not owns(KEYS[1], ARGV[1]) then return 0 end
complete(KEYS[1], 2)
return 1
`

// releaseLua: KEYS[1] record, KEYS[2] expiry index; ARGV token. Returns
// 1, or 0 when the token does not own the record. The record leaves the
// index too, so Sweep never counts a released key.
const releaseLua = luaPrelude + `
if not owns(KEYS[1], ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
return 1
`

// sweepLua: KEYS[1] expiry index; ARGV limit. Removes up to limit index
// entries whose time has passed and deletes each record still due: a
// completed record past its retention, or a reservation past its lease
// (its score, the lease plus the grace, has passed too, since every
// reservation and completion rewrites the score). Redis may have dropped
// the record already; a record taken over since is left alone. Returns
// how many due records left the store.
const sweepLua = luaPrelude + `
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local swept = 0
for _, rec in ipairs(due) do
	local f = redis.call('HMGET', rec, 'state', 'expires', 'lease')
	if (f[1] == 'completed' and tonumber(f[2]) <= now) or (f[1] == 'reserved' and tonumber(f[3]) <= now) then
		redis.call('DEL', rec)
		swept = swept + 1
	elseif not f[1] then
		swept = swept + 1
	end
	redis.call('ZREM', KEYS[1], rec)
end
return swept
`

// scripts are the store's Lua scripts, loaded on first use (EVALSHA with
// a fallback to EVAL).
type scripts struct {
	reserve, complete, release, sweep script
}

func newScripts() scripts {
	return scripts{
		reserve:  newScript(reserveLua),
		complete: newScript(completeLua),
		release:  newScript(releaseLua),
		sweep:    newScript(sweepLua),
	}
}
