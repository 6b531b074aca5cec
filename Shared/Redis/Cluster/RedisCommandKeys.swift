/// Which arguments of a command are keys, so that a cluster client sends it to the master of their
/// slot. Written out for the commands Redis has (not asked of the server with `COMMAND`): the
/// client routes every command before it is sent, and the answer never changes.
enum RedisCommandKeys {
    /// The positions of `command`'s keys; empty for a command that names none, which any master
    /// may serve. A `PUBLISH` is routed by its channel as if it were a key: every node passes it on
    /// to its subscribers, but those of one channel get its messages in publishing order only when
    /// they all go through the same node.
    static func positions(in command: [RedisArgument]) -> [Int] {
        guard let name = command.first?.upperCasedName else { return [] }
        let count = command.count
        if keyless.contains(name) { return [] }
        if everyArgument.contains(name) { return Array(1..<max(1, count)) }
        switch name {
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
            guard count > 2, let keys = Int(String(decoding: command[2].bytes, as: UTF8.self)), keys > 0 else { return [] }
            return Array(3..<min(count, 3 + keys))
        case "XREAD", "XREADGROUP":
            guard let streams = command.firstIndex(where: { $0.upperCasedName == "STREAMS" }) else { return [] }
            let keys = (count - streams - 1) / 2
            return Array((streams + 1)..<(streams + 1 + keys))
        case "MSET", "MSETNX":
            return Array(stride(from: 1, to: count, by: 2))
        case "XGROUP", "XINFO", "OBJECT":
            return count > 2 ? [2] : []
        case "MEMORY":
            return count > 2 && command[1].upperCasedName == "USAGE" ? [2] : []
        case "RENAME", "RENAMENX", "SMOVE", "LMOVE", "RPOPLPUSH", "COPY", "BLMOVE", "BRPOPLPUSH":
            return Array(1..<min(count, 3))
        case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX":
            return Array(1..<max(1, count - 1))
        default:
            return count > 1 ? [1] : []
        }
    }

    /// Commands whose keys may lie in different slots and whose reply can be put together from one
    /// command per slot: `MGET`'s values in the order asked, the others' counts added up.
    static func splitsAcrossSlots(_ name: String) -> Bool {
        name == "MGET" || summed.contains(name)
    }

    /// Commands split across slots whose replies are counts to add up.
    static let summed: Set<String> = ["DEL", "UNLINK", "EXISTS", "TOUCH"]

    /// Commands every master must run: each holds its own data and script cache.
    static let everyMaster: Set<String> = ["FLUSHALL", "FLUSHDB", "SCRIPT"]

    private static let everyArgument: Set<String> = [
        "MGET", "DEL", "UNLINK", "EXISTS", "TOUCH", "WATCH", "SINTER", "SUNION", "SDIFF", "SINTERSTORE",
        "SUNIONSTORE", "SDIFFSTORE", "PFCOUNT", "PFMERGE",
    ]

    private static let keyless: Set<String> = [
        "PING", "ECHO", "INFO", "TIME", "DBSIZE", "FLUSHALL", "FLUSHDB", "SCRIPT", "CLUSTER", "CONFIG", "CLIENT",
        "COMMAND", "SELECT", "AUTH", "HELLO", "ROLE", "WAIT", "WAITAOF", "MULTI", "EXEC", "DISCARD", "UNWATCH",
        "ASKING", "READONLY", "READWRITE", "LASTSAVE", "SAVE", "BGSAVE", "BGREWRITEAOF", "SLOWLOG", "KEYS", "SCAN",
        "RANDOMKEY", "LATENCY", "FUNCTION", "SHUTDOWN", "SWAPDB", "DEBUG", "ACL", "MONITOR", "LOLWUT",
    ]
}
