-- once.lua: request IDs (store.WithRequestID). A request that carries an ID
-- names one more key, its once key: the state's key followed by the ID, in
-- the same hash tag and so the same Redis Cluster slot. An admission made
-- with it stores its reply there, for as long as what it charged counts (its
-- reset_after, plus the prelude's grace); a request that finds the key
-- returns that reply and decides nothing. A denial stores nothing.
--
-- A request with a once key also passes the limit its Result reports
-- (algorithms.Algorithm.MaxCost), which the record keeps and every reply to
-- it ends with, followed by what the admission charged
-- (algorithms.Result.Charged): the parameters it was decided under, the
-- limit or rate count and the burst (or the sub-windows, or 0), and its
-- cost. A retry made after the key's limit changed thus gets the first
-- outcome with the limit and the charge it was decided under. A record of
-- a decision or a booking is {allowed, remaining, retry_after,
-- reset_after, at, delay, limit, charged limit, charged burst, cost}, a
-- decision's delay 0, so either driver can answer the other's.
-- decide_batch.lua keeps {allowed, remaining, retry_after, reset_after, at}
-- only, and decide_set_batch.lua those five for each limit: a batch carries
-- the store's own IDs, which are only ever resent in the same batch, never
-- the caller's (see WithCoalescing); decide.lua falls back to the limit and
-- charge it is given all the same.
-- requires: rec.lua

-- A record is kept at least once_horizon µs, which a driver sets from its
-- arguments: how long go-redis may still send the request again
-- (resendHorizon), 0 for a client that sends once.
local once_horizon = 0

-- once_seen returns the reply kept under k, or nil when k is nil or empty.
local function once_seen(k)
  if not k then return nil end
  local v = redis.call('GET', k)
  if not v then return nil end
  local r = {}
  for f in string.gmatch(v, '%-?%d+') do r[#r + 1] = tonumber(f) end
  return r
end

-- once_keep keeps reply, a list of integers, under k for us µs, and at
-- least once_horizon.
local function once_keep(k, reply, us)
  local s = {}
  for i = 1, #reply do s[i] = string.format('%d', reply[i]) end
  redis.call('SET', k, table.concat(s, ' '), 'PX', ttl_ms(max(us, once_horizon)))
end
