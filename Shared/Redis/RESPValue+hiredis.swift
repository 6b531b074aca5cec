import CHiredis

extension RESPValue {
    /// Deep-copies a hiredis reply; the caller still owns `reply` and must `freeReplyObject` it.
    init(copying reply: UnsafePointer<redisReply>) {
        let reply = reply.pointee
        switch reply.type {
        case REDIS_REPLY_STRING:
            self = .bulkString(Self.bytes(reply))
        case REDIS_REPLY_STATUS:
            self = .simpleString(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(reply.integer))
        case REDIS_REPLY_ARRAY:
            let elements = UnsafeBufferPointer(start: reply.element, count: reply.elements)
            self = .array(elements.map { element in element.map { RESPValue(copying: $0) } ?? .null })
        default:
            // REDIS_REPLY_NIL, and any type a future hiredis might add.
            self = .null
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let start = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: reply.len))
    }
}
