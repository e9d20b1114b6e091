-- pack.lua: states of a few integers as binary strings, for the steps whose
-- state is a string (bucket.lua, fixed_window.lua, compact_log.lua): fields
-- of n bytes each, big-endian and unsigned, so any integer 0 <= x < 2^(8n)
-- fits, and every value a decision writes (below 2^53) round-trips exactly
-- in 7 bytes or more. Reading a state is one struct.unpack and writing it
-- one struct.pack, where decimal text took a pattern match, a tonumber per
-- field and a string.format.
--
-- bin_pack(fmt, ...) and bin_unpack(fmt, s[, pos]) take fmt '>In…', the
-- same size n (7 or 8) for every field, as struct.pack and struct.unpack
-- do: bin_unpack returns the fields from byte pos on (1 by default), then,
-- as struct does, the position after them, which callers ignore. (Not pack
-- and unpack: unpack is Lua's own, which log.lua calls.) Callers check a
-- string's length first.

-- struct is read with rawget: Redis and miniredis both refuse a script
-- that names a global they do not have.
local struct = rawget(_G, 'struct')
local bin_pack, bin_unpack = nil, nil
if struct then
  bin_pack, bin_unpack = struct.pack, struct.unpack
else
  -- gopher-lua (miniredis) has no struct library: the same bytes, by hand.
  -- A field at or past 2^(8n) keeps its low 8n bits, as struct.pack keeps.
  bin_pack = function(fmt, ...)
    local n, out = tonumber(string.sub(fmt, 3, 3)), {}
    for i = 1, select('#', ...) do
      local x, b = select(i, ...), {}
      for j = n, 1, -1 do
        local d = x % 256
        b[j], x = d, (x - d) / 256
      end
      out[i] = string.char(unpack(b))
    end
    return table.concat(out)
  end
  bin_unpack = function(fmt, s, pos)
    local n, v = tonumber(string.sub(fmt, 3, 3)), {}
    pos = pos or 1
    for _ = 1, (#fmt - 1) / 2 do
      local x = 0
      for j = pos, pos + n - 1 do x = x * 256 + string.byte(s, j) end
      v[#v + 1], pos = x, pos + n
    end
    v[#v + 1] = pos
    return unpack(v)
  end
end
