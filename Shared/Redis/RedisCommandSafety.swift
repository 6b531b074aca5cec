/// Which commands `RedisClient` may resend after the connection broke with the request already sent:
/// only commands that change nothing, so running one twice is harmless.
enum RedisCommandSafety {
    static func isReadOnly(_ command: [RedisArgument]) -> Bool {
        guard let name = command.first?.bytes, name.count <= 20 else { return false }
        let upper = String(decoding: name.map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 }, as: UTF8.self)
        return readOnlyCommands.contains(upper)
    }

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
