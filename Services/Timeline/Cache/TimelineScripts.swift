import Redis

/// The Lua scripts that change timelines atomically (``PackedTimeline``: a state byte, then 8-byte
/// ids oldest first). Ids are compared byte by byte, never as Lua numbers (doubles) nor with Lua's
/// `<` on strings (the server's collation). A key that holds a sorted set is a ``LegacyTimeline``:
/// writes keep it current with its members' decimal form, `ARGV` after the packed ids.
enum TimelineScripts {
    /// Helpers: `older(a, b)`, `split(s, from)` (the 8-byte entries of `s` from byte `from`),
    /// `merged(a, b)` (two ascending lists as one, without repeats), `packed(state, ids, cap)` (the
    /// value of at most the newest `cap` of `ids`; a whole timeline that loses any becomes
    /// truncated), `trimmed(value, cap)` (the same for a value), `place(n, id, entry)` (how many of `n`
    /// entries, the k-th given by `entry(k)`, are older than `id`, and whether the next is it: searched
    /// back from the newest in doubling steps, then by halves, so a late tweet costs a few lookups)
    /// and `position(value, id)` (`place` over a value).
    private static let entries = """
        local function older(a, b)
          for i = 1, 8 do
            local x, y = string.byte(a, i), string.byte(b, i)
            if x ~= y then return x < y end
          end
          return false
        end
        local function split(s, from)
          local ids = {}
          for i = from, #s - 7, 8 do ids[#ids + 1] = string.sub(s, i, i + 7) end
          return ids
        end
        local function merged(a, b)
          local out, i, j = {}, 1, 1
          while i <= #a or j <= #b do
            local x, y = a[i], b[j]
            if x == y then out[#out + 1] = x; i = i + 1; j = j + 1
            elseif y == nil or (x ~= nil and older(x, y)) then out[#out + 1] = x; i = i + 1
            else out[#out + 1] = y; j = j + 1 end
          end
          return out
        end
        local function packed(state, ids, cap)
          local first = 1
          if #ids > cap then
            first = #ids - cap + 1
            if state == 'W' then state = 'T' end
          end
          return state .. table.concat(ids, '', first)
        end
        local function trimmed(value, cap)
          if #value <= 1 + 8 * cap then return value end
          local state = string.sub(value, 1, 1)
          if state == 'W' then state = 'T' end
          return state .. string.sub(value, #value - 8 * cap + 1)
        end
        local function place(n, id, entry)
          local low, high, step = n, n + 1, 1
          while low > 0 and not older(entry(low), id) do
            high = low
            low = math.max(0, low - step)
            step = step * 2
          end
          while high - low > 1 do
            local middle = math.floor((low + high) / 2)
            if older(entry(middle), id) then low = middle else high = middle end
          end
          return low, high <= n and entry(high) == id
        end
        local function position(value, id)
          return place((#value - 1) / 8, id, function(k) return string.sub(value, 8 * k - 6, 8 * k + 1) end)
        end
        """

    /// `addToEach(firstKey, firstArg)`: adds the ids `ARGV[firstArg]` (packed, ascending, distinct)
    /// to each timeline of `KEYS[firstKey…]` that exists (a missing one is rebuilt on its next read;
    /// an expired one belongs to an inactive user), with `ARGV[1]` the capacity and `ARGV[2]` the
    /// length past which a timeline is trimmed back to it. Returns how many it added to.
    ///
    /// Ids newer than the newest entry, as fan-out's nearly always are, are appended: one lookup of
    /// the last entry and one `APPEND`. Others (tweets fanned out concurrently, a followee's tweets
    /// after a follow) are each spliced in at its place, found by `place` over 8-byte `GETRANGE`s
    /// (`placeOf`), by a `SETRANGE` of it and the entries after it: a few bytes for a tweet
    /// that arrived a little late, and no value copied into Lua. Hundreds of ids are merged into a
    /// rewrite instead. Trimming waits for the slack above the capacity, so a full timeline is
    /// rewritten once per that many appends.
    private static let addToEach = entries + "\n" + """
        local function placeOf(key, n, id)
          return place(n, id, function(k) return redis.call('GETRANGE', key, 8 * k - 7, 8 * k) end)
        end
        local function addToEach(firstKey, firstArg)
          local cap, limit, ids = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[firstArg]
          local oldestNew = string.sub(ids, 1, 8)
          local touched = 0
          for i = firstKey, #KEYS do
            local key = KEYS[i]
            local tail = redis.pcall('GETRANGE', key, -9, -1)
            if type(tail) == 'table' then
              for j = firstArg + 1, #ARGV do redis.call('ZADD', key, 0, ARGV[j]) end
              touched = touched + 1
            elseif #tail > 0 then
              local size
              if #tail == 1 or older(string.sub(tail, 2), oldestNew) then
                size = redis.call('APPEND', key, ids)
              elseif #ids <= 8 * 128 then
                local n = (redis.call('STRLEN', key) - 1) / 8
                for _, id in ipairs(split(ids, 1)) do
                  local before, present = placeOf(key, n, id)
                  if not present then
                    redis.call('SETRANGE', key, 8 * before + 1, id .. redis.call('GETRANGE', key, 8 * before + 1, -1))
                    n = n + 1
                  end
                end
                size = 1 + 8 * n
              else
                local value = redis.call('GET', key)
                value = packed(string.sub(value, 1, 1), merged(split(value, 2), split(ids, 1)), cap)
                redis.call('SET', key, value, 'KEEPTTL')
                size = #value
              end
              if size > 1 + 8 * limit then
                redis.call('SET', key, trimmed(redis.call('GET', key), cap), 'KEEPTTL')
              end
              touched = touched + 1
            end
          end
          return touched
        end
        """

    /// Fan-out: ``addToEach`` for `KEYS` with the ids `ARGV[3]`.
    static let addToExisting = RedisScript(addToEach + "\n" + "return addToEach(1, 3)")

    /// Fan-out from a list of followers read when `KEYS[1]` (``TimelineKeys/followersVersion(_:)``)
    /// held `ARGV[3]`: ``addToEach`` for `KEYS[2…]` with the ids `ARGV[4]` while it still does, else
    /// nothing, and returns -1: a follow or unfollow handled since may have changed the list.
    static let addToExistingIfCurrent = RedisScript(
        addToEach + "\n" + """
            if (redis.call('GET', KEYS[1]) or '') ~= ARGV[3] then return -1 end
            return addToEach(2, 4)
            """)

    /// Removes the ids `ARGV[1]` (packed, any order) from each timeline of `KEYS` that exists. A few
    /// ids are found by `position`, many by one pass over the timeline.
    static let remove = RedisScript(
        entries + "\n" + """
            local gone, count = {}, #ARGV[1] / 8
            for _, id in ipairs(split(ARGV[1], 1)) do gone[id] = true end
            for i = 1, #KEYS do
              local key = KEYS[i]
              local value = redis.pcall('GET', key)
              if type(value) == 'table' then
                for j = 2, #ARGV do redis.call('ZREM', key, ARGV[j]) end
              elseif value and #value > 1 then
                local kept
                if count <= 16 then
                  local found = {}
                  for id in pairs(gone) do
                    local before, present = position(value, id)
                    if present then found[#found + 1] = before end
                  end
                  if #found > 0 then
                    table.sort(found)
                    kept = {string.sub(value, 1, 1)}
                    local from = 2
                    for _, before in ipairs(found) do
                      kept[#kept + 1] = string.sub(value, from, 8 * before + 1)
                      from = 8 * before + 10
                    end
                    kept[#kept + 1] = string.sub(value, from)
                  end
                else
                  local ids, dropped = split(value, 2), false
                  kept = {string.sub(value, 1, 1)}
                  for _, id in ipairs(ids) do
                    if gone[id] then dropped = true else kept[#kept + 1] = id end
                  end
                  if not dropped then kept = nil end
                end
                if kept then redis.call('SET', key, table.concat(kept), 'KEEPTTL') end
              end
            end
            return 1
            """)

    /// Starts a rebuild of `KEYS[1]`: returns 0 when the timeline is complete, else marks it as
    /// being built (so fan-out adds to it from now on), gives it the lifetime `ARGV[1]` seconds and
    /// returns 1. A sorted set left by a deployment from before is dropped: the build replaces it.
    static let beginBuild = RedisScript(
        """
        local state = redis.pcall('GETRANGE', KEYS[1], 0, 0)
        if type(state) == 'table' then
          redis.call('DEL', KEYS[1])
          state = ''
        end
        if state == 'W' or state == 'T' then return 0 end
        if state == '' then
          redis.call('SET', KEYS[1], 'B', 'EX', ARGV[1])
        else
          redis.call('EXPIRE', KEYS[1], ARGV[1])
        end
        return 1
        """)

    /// Completes a rebuild of `KEYS[1]`: merges the ids `ARGV[4]` (packed, ascending) with what
    /// fan-out added meanwhile, whole when `ARGV[3]` is `1`, keeps the newest `ARGV[1]` and sets the
    /// lifetime `ARGV[2]` seconds.
    static let finishBuild = RedisScript(
        entries + "\n" + """
            local current = redis.pcall('GET', KEYS[1])
            if type(current) ~= 'string' then current = '' end
            local state = ARGV[3] == '1' and 'W' or 'T'
            local value = packed(state, merged(split(current, 2), split(ARGV[4], 1)), tonumber(ARGV[1]))
            redis.call('SET', KEYS[1], value, 'EX', ARGV[2])
            return 1
            """)

    /// Replaces the ``LegacyTimeline`` sorted set `KEYS[1]` with the timeline `ARGV[3]` it was read
    /// as, keeping its lifetime, if it still has `ARGV[1]` members and the newest `ARGV[2]`: else a
    /// write came between, and it returns 0.
    static let convertLegacy = RedisScript(
        """
        local key = KEYS[1]
        if redis.call('TYPE', key).ok ~= 'zset' then return 0 end
        if redis.call('ZCARD', key) ~= tonumber(ARGV[1]) then return 0 end
        if (redis.call('ZRANGE', key, -1, -1)[1] or '') ~= ARGV[2] then return 0 end
        local lifetime = redis.call('PTTL', key)
        redis.call('DEL', key)
        if lifetime > 0 then
          redis.call('SET', key, ARGV[3], 'PX', lifetime)
        else
          redis.call('SET', key, ARGV[3])
        end
        return 1
        """)

    /// Deletes `KEYS[1]` if it holds exactly `ARGV[1]` (the token of a lock this process holds, or a
    /// timeline with nothing in it but its state byte).
    static let deleteIfHolding = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """)

    /// Adds `ARGV` to the celebrity set; when any is new, bumps the generation so that cached
    /// lists of followed celebrities are recomputed. Returns how many were new.
    static let addCelebrities = RedisScript(
        """
        local added = redis.call('SADD', KEYS[1], unpack(ARGV))
        if added > 0 then redis.call('INCR', KEYS[2]) end
        return added
        """)
}
