"""The Lua scripts of the RSMQ trash's batch life cycle (the per-message ones are in :mod:`.scripts`).

A batch is made *filling*: its meta hash holds ``filler`` (a token only the purge that made it
knows) and ``touched`` (Redis TIME seconds, set by every message that goes in). Listing,
restore and empty pass a filling batch by while it is fresh (:data:`~.backend.FILL_GRACE_S`),
as the file trash hides a batch under a ``.fill-`` name until it is complete; one whose filler
went quiet longer than that (killed, or cut off) is taken over (:data:`TAKE`: sealed) and is
then a batch like any other. :data:`REMOVE` puts a message into a batch only while its
``filler`` is the caller's token, so a batch emptied, restored or sealed meanwhile never gets
another message (the message stays in its queue, the purge stops with one line), and scripts a
stalled connection delivers late touch nothing once the purge sealed its batch (:data:`FINISH`).
"""

from __future__ import annotations

from .scripts import _CHECK

#: a new batch: KEYS meta, index; ARGV batch, token, action, queue, user, created (epoch s)
NEW_BATCH = """
local t = redis.call("TIME")
redis.call("HSET", KEYS[1], "action", ARGV[3], "queue", ARGV[4], "user", ARGV[5], "created", ARGV[6],
           "count", 0, "complete", 0, "filler", ARGV[2], "touched", t[1])
redis.call("ZADD", KEYS[2], ARGV[6], ARGV[1])
return "ok"
"""

#: rsmq's deleteMessage and, when ARGV[4] == "1", the message (body, rc, fr, score) into the
#: batch KEYS[3] (hash) at its place ARGV[5] in KEYS[4] (zset), only while the batch's meta
#: KEYS[5] names the caller's token ARGV[6] as its filler: else ``nobatch`` and nothing touched.
#: Into the batch first, out of the queue last: Redis keeps a script's earlier writes when a later
#: command fails (a batch key planted of another type: WRONGTYPE), and the other way round such a
#: failure had taken the message out of its queue and put it nowhere
REMOVE = """
if ARGV[4] == "1" and redis.call("HGET", KEYS[5], "filler") ~= ARGV[6] then return "nobatch" end
""" + _CHECK + """
local f = redis.call("HMGET", KEYS[2], id, id .. ":rc", id .. ":fr")
if ARGV[4] == "1" then
  redis.call("HSET", KEYS[3], id .. ":s", s)
  if f[1] then redis.call("HSET", KEYS[3], id, f[1]) end
  if f[2] then redis.call("HSET", KEYS[3], id .. ":rc", f[2]) end
  if f[3] then redis.call("HSET", KEYS[3], id .. ":fr", f[3]) end
  redis.call("ZADD", KEYS[4], ARGV[5], id)
  redis.call("HSET", KEYS[5], "touched", redis.call("TIME")[1])
end
redis.call("ZREM", KEYS[1], id)
redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr")
return "ok"
"""

#: the purge that fills a batch closes it: KEYS meta, messages, order, index; ARGV token, batch.
#: An empty batch is dropped (0), else sealed complete with its count (n): no late REMOVE adds
#: to it. -1: no longer this purge's (taken over, emptied, restored): left as it is
FINISH = """
if redis.call("HGET", KEYS[1], "filler") ~= ARGV[1] then return -1 end
local n = redis.call("ZCARD", KEYS[3])
if n == 0 then
  redis.call("UNLINK", KEYS[1], KEYS[2], KEYS[3])
  redis.call("ZREM", KEYS[4], ARGV[2])
  return 0
end
redis.call("HDEL", KEYS[1], "filler")
redis.call("HSET", KEYS[1], "complete", 1, "count", n)
return n
"""

#: restore or empty takes a batch: KEYS meta; ARGV the freshness grace (s). ``filling`` while a
#: purge is filling it and touched it within the grace (either way of the clock); else ``ok``,
#: and a batch whose filler went quiet is sealed first (no REMOVE of that purge adds to it)
TAKE = """
if redis.call("TYPE", KEYS[1]).ok ~= "hash" then return "ok" end  -- broken (planted): no purge fills it
local f = redis.call("HMGET", KEYS[1], "filler", "touched")
if not f[1] then return "ok" end
local now = tonumber(redis.call("TIME")[1])
if math.abs(now - (tonumber(f[2]) or 0)) < tonumber(ARGV[1]) then return "filling" end
redis.call("HDEL", KEYS[1], "filler")
redis.call("HSET", KEYS[1], "complete", 1, "abandoned", 1)
return "ok"
"""
