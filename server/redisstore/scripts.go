package redisstore

// luaPrelude is shared by every script. Times are the Redis server's, in
// milliseconds. A record is one string (record.go); a record still in the
// hash form of earlier versions is read too, and replaced by a string
// when written. A completion's arguments are two consecutive ARGV
// entries: the encoded response, the retention in ms; the expiry index
// is always the last key.
const luaPrelude = `
local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- owner returns the creation time and fingerprint of rec if token holds
-- its reservation, else nil.
local function owner(rec, token)
	if token == '' then return nil end
	local v = redis.pcall('GET', rec)
	if type(v) == 'string' then
		local created, t, fp = string.match(v, '^R%d+:(%d+):([^:]*):(.*)$')
		if t == token then return created, fp end
	elseif v then -- WRONGTYPE: the hash form
		local f = redis.call('HMGET', rec, 'state', 'token', 'created', 'fp')
		if f[1] == 'reserved' and f[2] == token then return f[3] or '0', f[4] or '' end
	end
	return nil
end

local function complete(rec, created, fp, i)
	local expires = now_ms() + tonumber(ARGV[i + 1])
	redis.call('SET', rec, 'C' .. expires .. ':' .. created .. ':' .. #fp .. ':' .. fp .. ARGV[i], 'PXAT', expires)
	redis.call('ZADD', KEYS[#KEYS], expires, rec)
end
`

// reserveLua: KEYS[1] record, KEYS[2] expiry index; ARGV token, lease
// ms, fingerprint, grace ms. Returns 1 when reserved, else the record:
// a string, or a hash form's HGETALL. A reservation expires, and is
// indexed as due, at the end of its lease plus the grace. The common
// case, a new key, is one SET NX … GET, which writes the reservation only
// if the key is absent and otherwise returns what is there. A record's
// scope and key are in its name, so it holds only what a replay or a
// takeover reads.
const reserveLua = luaPrelude + `
local rec = KEYS[1]
local now = now_ms()
local lease = now + tonumber(ARGV[2])
local due = lease + tonumber(ARGV[4])
local val = 'R' .. lease .. ':' .. now .. ':' .. ARGV[1] .. ':' .. ARGV[3]
local old = redis.pcall('SET', rec, val, 'NX', 'PXAT', due, 'GET')
local free = not old
if type(old) == 'string' then
	local state, t = string.match(old, '^(.)(%d+)')
	if state == 'R' then
		free = tonumber(t) <= now and string.match(old, '^R%d+:%d+:[^:]*:(.*)$') == ARGV[3]
	else
		free = tonumber(t) <= now
	end
elseif old then -- WRONGTYPE: the hash form
	local f = redis.call('HMGET', rec, 'state', 'lease', 'fp', 'expires')
	if f[1] == 'reserved' then
		free = tonumber(f[2]) <= now and f[3] == ARGV[3]
	elseif f[1] == 'completed' then
		free = tonumber(f[4]) <= now
	end
	if not free then return redis.call('HGETALL', rec) end
end
if not free then return old end
if old then redis.call('SET', rec, val, 'PXAT', due) end
redis.call('ZADD', KEYS[2], due, rec)
return 1
`

// completeLua: KEYS[1] record, KEYS[2] expiry index; ARGV token, then a
// completion. Returns 1, or 0 when the token does not own the record.
const completeLua = luaPrelude + `
local created, fp = owner(KEYS[1], ARGV[1])
if not created then return 0 end
complete(KEYS[1], created, fp, 2)
return 1
`

// releaseLua: KEYS[1] record, KEYS[2] expiry index; ARGV token. Returns
// 1, or 0 when the token does not own the record. The record leaves the
// index too, so Sweep never counts a released key.
const releaseLua = luaPrelude + `
if not owner(KEYS[1], ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
return 1
`

// sweepLua: KEYS[1] expiry index; ARGV limit. Removes up to limit index
// entries whose time has passed and deletes each record still due: a
// completed record past its retention, or a reservation past its lease
// (its score, the lease plus the grace, has passed too, since every
// reservation and completion rewrites the score). Either form's time is
// the number after its state letter. Redis may have dropped the record
// already; a record taken over since is left alone. Returns how many due
// records left the store.
const sweepLua = luaPrelude + `
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local swept = 0
for _, rec in ipairs(due) do
	local v = redis.pcall('GET', rec)
	local t
	if type(v) == 'string' then
		t = tonumber(string.match(v, '^[RC](%d+)'))
	elseif v then -- WRONGTYPE: the hash form
		local f = redis.call('HMGET', rec, 'state', 'expires', 'lease')
		if f[1] == 'completed' then t = tonumber(f[2]) elseif f[1] == 'reserved' then t = tonumber(f[3]) end
	end
	if not v then
		swept = swept + 1
	elseif t and t <= now then
		redis.call('DEL', rec)
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
