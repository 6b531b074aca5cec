/// What `RedisClient` must know of a command before it sends it.
enum RedisCommandSafety {
    /// Whether the command may be sent again after the connection broke with the request already
    /// sent: only commands that change nothing, so running one twice is harmless.
    static func isReadOnly(_ command: [RedisArgument]) -> Bool {
        guard let name = command.first?.upperCasedName else { return false }
        return readOnlyCommands.contains(name)
    }

    /// Whether the server may hold the command before answering (`BLPOP`, `XREADGROUP … BLOCK`,
    /// `WAIT`): such a command needs a connection no other caller waits behind.
    static func mayBlock(_ command: [RedisArgument]) -> Bool {
        // Each of them starts with B, W or X: most commands are ruled out by their first byte.
        switch command.first?.bytes.first.map({ $0 | 0x20 }) {
        case UInt8(ascii: "b"), UInt8(ascii: "w"), UInt8(ascii: "x"): break
        default: return false
        }
        guard let name = command.first?.upperCasedName else { return false }
        if blockingCommands.contains(name) { return true }
        guard name == "XREAD" || name == "XREADGROUP" else { return false }
        return command.dropFirst().contains { $0.upperCasedName == "BLOCK" }
    }

    private static let blockingCommands: Set<String> = [
        "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP", "WAIT", "WAITAOF",
    ]

    private static let readOnlyCommands: Set<String> = [
        "PING", "ECHO", "TIME", "INFO", "DBSIZE",
        "GET", "MGET", "GETRANGE", "STRLEN", "GETBIT", "BITCOUNT", "BITPOS",
        "EXISTS", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TYPE", "KEYS", "SCAN",
        "HGET", "HMGET", "HGETALL", "HKEYS", "HVALS", "HLEN", "HEXISTS", "HSTRLEN", "HSCAN",
        "LRANGE", "LLEN", "LINDEX", "LPOS",
        "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SINTER", "SUNION", "SDIFF", "SINTERCARD", "SSCAN",
        "ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX",
        "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT", "ZLEXCOUNT", "ZRANK", "ZREVRANK", "ZSCAN",
        "XRANGE", "XREVRANGE", "XLEN", "PFCOUNT", "EVALSHA_RO", "EVAL_RO",
    ]
}
