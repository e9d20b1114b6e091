-- set.lua: a decision over a set of limits on one subject, all or nothing
-- (store.SetDecider), which decide_set.lua makes once and
-- decide_set_batch.lua once for each set of its batch. The assembler puts
-- before the driver the step files of the set's kinds and "local kinds =
-- {{<name>_read, <name>_step, <name>_write}, ...}".
--
-- Every step runs first, writing nothing. If all admit, each writes what it
-- returned: every limit is charged. If any denies, only the denying steps
-- write (a denial writes what it would alone: expired records dropped, the
-- latest time), and each admitting limit is decided again at cost 0, an
-- inspection, for its uncharged result. An inspection writes only a bucket
-- state it converted from another rate count, as it would alone.

-- set_limits reads the limits of a set from ARGV[pos…]: for each limit in
-- turn, its kind's index in kinds, the number m of its parameters, then its
-- m parameters (as in decide.lua); n limits, or up to the end of ARGV when
-- n is nil. It returns them, {kind = kinds[i], p = parameters} each, and the
-- position after them.
local function set_limits(pos, n)
  local limits, i = {}, 0
  while (n and i < n) or (not n and ARGV[pos]) do
    local kind, m = kinds[tonumber(ARGV[pos])], tonumber(ARGV[pos + 1])
    local p = {}
    for j = 1, m do p[j] = tonumber(ARGV[pos + 1 + j]) end
    i = i + 1
    limits[i], pos = {kind = kind, p = p}, pos + 2 + m
  end
  return limits, pos
end

-- Scratch tables of set_decide, kept across the decisions of a script
-- call: a script builds every table it makes again on each call, and a
-- batch makes many decisions. states[i] is limit i's state, results[i]
-- what its step returned; set_decide sets every field it reads.
local set_states, set_results = {}, {}

-- set_known holds the states held in one string that this script call has
-- read or written, by key (false for none), so that a batch's later
-- decisions on a hot key read them without a GET: nothing else writes
-- them during the call, and no key expires while a script runs, Redis's
-- clock standing still for it.
local set_known = {}

-- set_memo, when a driver sets it to a table (decide_set_batch.lua does),
-- keeps by key and cost what the step of a state held in one string
-- returned when it wrote nothing (a denial, an inspection), with the
-- state, time and parameters it was given: a step is a function of those
-- alone, so a batch's later decisions on a hot key that repeat them take
-- its result without running it.
local set_memo = nil

-- set_step puts what limit l's step returns for key's state in r, from
-- set_memo when it holds the step's result for the same inputs.
local function set_step(l, key, state, r)
  local p, memo = l.p, nil
  if set_memo and not l.kind[1] then
    memo = set_memo[key]
    local m = memo and memo[cost]
    if m and m.state == state and m.now == now and m.p == p then
      for j = 1, 9 do r[j] = m[j] end
      return
    end
  end
  r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] = l.kind[2](key, state, p[1], p[2], p[3], p[4])
  if set_memo and not l.kind[1] and not r[6] then
    if not memo then
      memo = {}
      set_memo[key] = memo
    end
    local m = memo[cost]
    if not m then
      m = {}
      memo[cost] = m
    end
    m.state, m.now, m.p = state, now, p
    for j = 1, 9 do m[j] = r[j] end
  end
end

-- set_decide decides the prelude's cost (and need) at its now for limits,
-- limit i's state at KEYS[base + i], writes what the decision changes,
-- and puts each limit's allowed, remaining, retry_after, reset_after and
-- at in reply from reply[at + 1] on, five fields a limit. It returns
-- whether all admitted, and the longest reset_after.
local function set_decide(base, limits, reply, at)
  local n, states, all = #limits, set_states, true
  for i = 1, n do
    local l, key = limits[i], KEYS[base + i]
    local state
    if l.kind[1] then
      state = l.kind[1](key)
    else
      state = set_known[key]
      if state == nil then
        state = str_get(key)
        set_known[key] = state
      end
    end
    states[i] = state
    local r = set_results[i]
    if not r then
      r = {}
      set_results[i] = r
    end
    set_step(l, key, state, r)
    if r[1] ~= 1 then all = false end
  end
  local longest = 0
  for i = 1, n do
    local l, key, r = limits[i], KEYS[base + i], set_results[i]
    if cost > 0 and not all and r[1] == 1 then
      local c, nd = cost, need
      cost, need = 0, 1
      set_step(l, key, states[i], r)
      cost, need = c, nd
    end
    -- A denial, an admission of a set that all admitted, and an inspection
    -- that converted a state write.
    if r[6] then
      if l.kind[3] then
        l.kind[3](key, r[6], r[7], r[8], r[9])
      else
        str_set(key, r[6], r[7])
        set_known[key] = r[6]
      end
    end
    local k = at + 5 * (i - 1)
    reply[k + 1], reply[k + 2], reply[k + 3], reply[k + 4], reply[k + 5] = r[1], r[2], r[3], r[4], r[5]
    longest = max(longest, r[4])
  end
  return all, longest
end
