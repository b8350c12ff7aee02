"""The Lua scripts behind every RSMQ change: one script per message, atomic on the server.

Each script that changes a message first checks that it is still what qconsole saw (its score
and receive count): a message a consumer deleted meanwhile answers ``gone``, one a consumer
received (re-scored, ``rc`` + 1) answers ``changed``; neither is touched. "Now" is always Redis
TIME in milliseconds, computed as rsmq does (seconds and the first three digits of the µs).

Every key a script touches is passed in KEYS. Scripts are short and bounded (a handful of
commands on one message), so none blocks the server noticeably.

Ids come from untrusted data (anyone can ZADD a member, or plant a trash batch), and a queue's
hash holds its settings and counters beside the bodies: every script that takes an id answers
``foreign``, touching nothing, for one that names a queue field or holds ``:`` (``{id}:rc`` and
``{id}:fr`` are other messages' fields), so no member can reach a setting or another message.
"""

from __future__ import annotations

#: digits a receive count (``{id}:rc``) has at most to be read as one (``backend._rc``): HINCRBY
#: counts to 2**63 - 1 (19 digits), and Python's int() refuses a string of over 4,300 digits
RC_DIGITS = 18

#: the queue's own fields in its hash: what rsmq 0.12.4 (createQueue, sendMessage, receiveMessage)
#: and PyRSMQ 0.6.1 write, and ``createdby``, which qconsole always read as a queue field. Never a
#: message id: both clients make ids of 32 characters, base36 of Redis TIME in µs then 22 [0-9A-Za-z]
QUEUE_FIELDS: tuple[str, ...] = ("vt", "delay", "maxsize", "totalsent", "totalrecv", "created", "modified",
                                 "createdby")

# ARGV[1] is the id; "foreign" (nothing touched) when it is no message's
_ID = """
local id = ARGV[1]
local fields = {""" + ", ".join(f"{f} = true" for f in QUEUE_FIELDS) + """}
if fields[id] or string.find(id, ":", 1, true) then return "foreign" end
"""

_NOW = """
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS[1] zset, KEYS[2] hash; ARGV[1] id, ARGV[2] score seen, ARGV[3] rc seen ("0": none). The
# receive count is taken as qconsole reads it (backend._rc: 1-18 digits, else none): compared as
# a number, a planted 'x' (nil) or 5,000 digits (inf) never equalled the 0 it was read as, so
# such a message (a poison one: Node's receive fails on its HINCRBY) could never be changed
_CHECK = _ID + """
local s = redis.call("ZSCORE", KEYS[1], id)
if not s then return "gone" end
local rc = redis.call("HGET", KEYS[2], id .. ":rc")
if not rc or #rc > """ + str(RC_DIGITS) + """ or not string.match(rc, "^%d+$") then rc = "0" end
if tonumber(s) ~= tonumber(ARGV[2]) or tonumber(rc) ~= tonumber(ARGV[3]) then return "changed" end
"""

#: totalsent + 1 *before* any other write: Redis does not roll back a script's earlier writes
#: when a later command fails, and HINCRBY fails on a planted non-integer (or overflowing)
#: counter. Such a counter refuses the change with one line naming it; nothing is written (a
#: retry never duplicates). HKEY: the hash; WHAT: what the line says was not done
_COUNT = """
local counted = redis.pcall("HINCRBY", HKEY, "totalsent", 1)
if type(counted) == "table" and counted.err then
  local v = tostring(redis.call("HGET", HKEY, "totalsent"))
  return redis.error_reply(HKEY .. " field totalsent holds '" .. _shown(v) .. "', which HINCRBY cannot count up ("
    .. string.gsub(counted.err, "^ERR ", "") .. "); WHAT. Set it to a whole number (HSET " .. HKEY
    .. " totalsent 0) and retry")
end
"""

#: a stored value for a one-line message: at most 40 characters, nothing but [A-Za-z0-9.+-_:]
_SHOWN = """
local function _shown(v)
  local s = string.gsub(string.sub(v, 1, 40), "[^%w%.%+%-_:]", "?")
  if #v > 40 then s = s .. "..." end
  return s
end
"""

#: JavaScript's parseInt(v, 10), as Node rsmq reads a queue's stored settings: leading white
#: space, a sign, then the leading digits ("1e309" -> 1, "12.9" -> 12); nil where it gives NaN
_PARSEINT = """
local function _parseint(v)
  if not v then return nil end
  local sign, digits = string.match(v, "^%s*([+-]?)(%d+)")
  if not digits then return nil end
  local n = tonumber(digits)
  if sign == "-" then n = -n end
  return n
end
"""

#: visible now, as changeMessageVisibility with vt 0; one already visible is left where it is
#: (re-scoring it would only move it back in the delivery order)
REQUEUE = _CHECK + _NOW + """
if tonumber(s) <= now then return "visible" end
redis.call("ZADD", KEYS[1], "XX", now, id)
return "ok"
"""

#: move KEYS[1..2] -> KEYS[3..4]: a fresh send into the destination (same id and body, visible
#: now, its totalsent + 1; the receive count starts again, as SQS's redrive does)
MOVE = _SHOWN + _CHECK + """
if redis.call("HEXISTS", KEYS[4], "vt") == 0 then return "nodest" end
if redis.call("ZSCORE", KEYS[3], id) or redis.call("HEXISTS", KEYS[4], id) == 1 then return "exists" end
local body = redis.call("HGET", KEYS[2], id)
""" + _COUNT.replace("HKEY", "KEYS[4]").replace("WHAT", "nothing moved") + """
redis.call("ZREM", KEYS[1], id)
redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr")
""" + _NOW + """
redis.call("ZADD", KEYS[3], now, id)
if body then redis.call("HSET", KEYS[4], id, body) end
return "ok"
"""

#: rsmq's sendMessage in one script: the id from Redis TIME (base36 of µs, 10 characters) and the
#: 22 random characters in ARGV[3]; score now + delay (ARGV[2] ms, "" = the queue's delay);
#: totalsent + 1; the realtime PUBLISH of the queue's size on ARGV[5] when ARGV[4] == "1"; ARGV[6]
#: the body's length as Node's maxsize check measures it (JavaScript's: UTF-16 code units)
PUBLISH = _SHOWN + _PARSEINT + """
local q = redis.call("HMGET", KEYS[2], "vt", "delay", "maxsize")
if not q[1] or not q[2] or not q[3] then return {"noqueue"} end
local delay
if ARGV[2] == "" then
  -- the queue's delay, checked as Node's sendMessage checks it (parseInt, 0..9999999 s): a planted
  -- "nan", "-inf" or "1e309" never makes a message scored nan/-inf/inf that no client delivers
  local d = _parseint(q[2])
  if not d or d < 0 or d > 9999999 then
    return redis.error_reply("the queue's stored delay '" .. _shown(q[2]) .. "' (" .. KEYS[2]
      .. ") is not a whole number of seconds within rsmq's bounds (0-9999999); nothing published: give --delay")
  end
  delay = d * 1000
else
  delay = tonumber(ARGV[2])
end
-- maxsize as Node reads it (parseInt; NaN: no limit, as Node's `length > NaN` is false)
local maxsize = _parseint(q[3])
if maxsize and maxsize ~= -1 and tonumber(ARGV[6]) > maxsize then return {"toolong", tostring(maxsize)} end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(t[1]) * 1000000 + tonumber(t[2])
local digits = "0123456789abcdefghijklmnopqrstuvwxyz"
local b36 = ""
while n > 0 do
  local r = n % 36
  b36 = string.sub(digits, r + 1, r + 1) .. b36
  n = math.floor(n / 36)
end
local id = b36 .. ARGV[3]
-- (the ZSCORE also fails, before any write, on a sorted set planted of another type: counted
-- first, totalsent went up for a message never sent)
if redis.call("HEXISTS", KEYS[2], id) == 1 or redis.call("ZSCORE", KEYS[1], id) then return {"exists"} end
""" + _COUNT.replace("HKEY", "KEYS[2]").replace("WHAT", "nothing published") + """
redis.call("ZADD", KEYS[1], now + delay, id)
redis.call("HSET", KEYS[2], id, ARGV[1])
if ARGV[4] == "1" then redis.call("PUBLISH", ARGV[5], redis.call("ZCARD", KEYS[1])) end
return {"ok", id}
"""

#: setQueueAttributes: ARGV are key/value pairs; ``modified`` = Redis TIME seconds, as rsmq
CONFIG = """
if redis.call("HEXISTS", KEYS[1], "vt") == 0 then return "noqueue" end
local t = redis.call("TIME")
redis.call("HSET", KEYS[1], "modified", t[1])
for i = 1, #ARGV, 2 do redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1]) end
return "ok"
"""

#: createQueue as rsmq: HSETNX the settings and times (Redis TIME seconds), then SADD QUEUES
CREATE = """
local t = redis.call("TIME")
if redis.call("HSETNX", KEYS[1], "vt", ARGV[2]) == 0 then return "exists" end
redis.call("HSETNX", KEYS[1], "delay", ARGV[3])
redis.call("HSETNX", KEYS[1], "maxsize", ARGV[4])
redis.call("HSETNX", KEYS[1], "created", t[1])
redis.call("HSETNX", KEYS[1], "modified", t[1])
redis.call("SADD", KEYS[2], ARGV[1])
return "ok"
"""

#: put one trashed message back exactly (id, body, rc, fr, its score): KEYS z, hash, trash hash,
#: trash order; a message whose id is in the queue again, or a queue deleted since, is left
RESTORE = _ID + """
local f = redis.call("HMGET", KEYS[3], id, id .. ":rc", id .. ":fr", id .. ":s")
if not f[4] then return "gone" end
if redis.call("HEXISTS", KEYS[2], "vt") == 0 then return "noqueue" end
if redis.call("ZSCORE", KEYS[1], id) or redis.call("HEXISTS", KEYS[2], id) == 1 then return "exists" end
redis.call("ZADD", KEYS[1], f[4], id)
if f[1] then redis.call("HSET", KEYS[2], id, f[1]) end
if f[2] then redis.call("HSET", KEYS[2], id .. ":rc", f[2]) end
if f[3] then redis.call("HSET", KEYS[2], id .. ":fr", f[3]) end
redis.call("HDEL", KEYS[3], id, id .. ":rc", id .. ":fr", id .. ":s")
redis.call("ZREM", KEYS[4], id)
return "ok"
"""

#: deleteQueue as rsmq (the hash and the zset, SREM from QUEUES) but by UNLINK, not DEL: a big
#: queue is freed in the background, not inside the script (DEL of 300k messages held Redis for
#: 0.2-0.3 s); the emptiness check and the unlinking stay one atomic step. KEYS hash, zset, QUEUES;
#: -2 (nothing deleted) when a key is not of rsmq's type: a queue named QUEUES (made by another
#: client) has the QUEUES set as its "zset", and DEL of it would forget every queue
DELETE_QUEUE = """
local ht = redis.call("TYPE", KEYS[1])["ok"]
local zt = redis.call("TYPE", KEYS[2])["ok"]
if (ht ~= "hash" and ht ~= "none") or (zt ~= "zset" and zt ~= "none") then return -2 end
if ARGV[2] ~= "1" and redis.call("ZCARD", KEYS[2]) > 0 then
  return -1
end
local n = redis.call("UNLINK", KEYS[1], KEYS[2])
redis.call("SREM", KEYS[3], ARGV[1])
return n
"""


#: a body longer than peek shows: its first ARGV[2] bytes and its length, KEYS[1] the hash (the
#: rest never crosses the network nor fills the client); read-only, one HGET
PEEK = _ID + """
local body = redis.call("HGET", KEYS[1], id)
if not body then return "gone" end
return {string.sub(body, 1, tonumber(ARGV[2])), #body}
"""
