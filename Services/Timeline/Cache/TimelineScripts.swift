import Redis

/// The Lua scripts that change timeline sets atomically, so that a set always has exactly one
/// sentinel (its lowest member, see ``TimelineMember``) and at most `capacity` entries besides it.
enum TimelineScripts {
    /// Trims `key` (of `size` members, when the caller knows) to `cap` entries plus its sentinel,
    /// oldest first; a trimmed whole set becomes truncated. `addAll` returns how many members were new.
    private static let trim = """
        local function trim(key, cap, size)
          local excess = (size or redis.call('ZCARD', key)) - cap - 1
          if excess > 0 then
            redis.call('ZREMRANGEBYRANK', key, 1, excess)
            if redis.call('ZREM', key, '\(TimelineMember.whole)') == 1 then
              redis.call('ZADD', key, 0, '\(TimelineMember.truncated)')
            end
          end
        end
        local function addAll(key, members, first)
          local added = 0
          for i = first, #members, 500 do
            local args = {}
            for j = i, math.min(i + 499, #members) do
              args[#args + 1] = 0
              args[#args + 1] = members[j]
            end
            added = added + redis.call('ZADD', key, unpack(args))
          end
          return added
        end
        """

    /// Fan-out: adds the members `ARGV[2…]` to each set of `KEYS` that exists (a missing one is
    /// rebuilt on its next read; an expired one belongs to an inactive user) and trims it to `ARGV[1]`.
    /// Returns how many sets it added to. A set that exists holds its sentinel at least, so its size
    /// tells whether it exists and, with what `ZADD` added, whether it needs trimming: one lookup
    /// of the set instead of three.
    static let addToExisting = RedisScript(
        trim + "\n" + addToEach + "\n" + "return addToEach(1, tonumber(ARGV[1]), 2)")

    /// Fan-out from a list of followers read when `KEYS[1]` (``TimelineKeys/followersVersion(_:)``)
    /// held `ARGV[2]` (empty for no key): as ``addToExisting`` for the sets `KEYS[2…]` and the
    /// members `ARGV[3…]` while it still does, else nothing, and returns -1: a follow or unfollow
    /// handled since may have changed the list.
    static let addToExistingIfCurrent = RedisScript(
        trim + "\n" + addToEach + "\n" + """
            if (redis.call('GET', KEYS[1]) or '') ~= ARGV[2] then return -1 end
            return addToEach(2, tonumber(ARGV[1]), 3)
            """)

    /// Adds the members `ARGV[firstMember…]` to each set of `KEYS[firstKey…]` that exists and trims
    /// it to `cap`; returns how many sets it added to.
    private static let addToEach = """
        local function addToEach(firstKey, cap, firstMember)
          local touched = 0
          for i = firstKey, #KEYS do
            local key = KEYS[i]
            local size = redis.call('ZCARD', key)
            if size > 0 then
              trim(key, cap, size + addAll(key, ARGV, firstMember))
              touched = touched + 1
            end
          end
          return touched
        end
        """

    /// Starts a rebuild of `KEYS[1]`: returns 0 when the set is already complete, else marks it as
    /// being built (so fan-out adds to it from now on), gives it the lifetime `ARGV[1]` seconds and returns 1.
    static let beginBuild = RedisScript(
        """
        local lowest = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
        if lowest == '\(TimelineMember.whole)' or lowest == '\(TimelineMember.truncated)' then return 0 end
        redis.call('ZADD', KEYS[1], 0, '\(TimelineMember.building)')
        redis.call('EXPIRE', KEYS[1], ARGV[1])
        return 1
        """)

    /// Completes a rebuild of `KEYS[1]`: merges the members `ARGV[4…]` into what fan-out added
    /// meanwhile, replaces the sentinel (whole when `ARGV[3]` is `1`), trims to `ARGV[1]` and sets
    /// the lifetime `ARGV[2]` seconds.
    static let finishBuild = RedisScript(
        trim + "\n" + """
            local key = KEYS[1]
            redis.call('ZREM', key, '\(TimelineMember.whole)', '\(TimelineMember.truncated)', '\(TimelineMember.building)')
            redis.call('ZADD', key, 0, ARGV[3] == '1' and '\(TimelineMember.whole)' or '\(TimelineMember.truncated)')
            addAll(key, ARGV, 4)
            trim(key, tonumber(ARGV[1]))
            redis.call('EXPIRE', key, ARGV[2])
            return 1
            """)

    /// Deletes the lock `KEYS[1]` if it still holds this holder's token `ARGV[1]`.
    static let releaseLock = RedisScript(
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
