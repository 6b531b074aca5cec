import Synchronization

/// Request metadata carried in `params._meta` (contract §1): never in method-specific params.
public struct RequestMeta: Sendable, Hashable, Codable {
    /// The caller's access token, for methods that act as a user.
    public var token: String?
    /// The calling service's credential, for internal methods.
    public var service: String?
    /// W3C trace context, forwarded on every downstream call.
    public var traceparent: String?
    /// The caller's remaining time budget in milliseconds.
    public var timeoutMs: Int64?
    /// The address of the client the call is made for, set by the public edge (`aviary-gateway`),
    /// which sees the client's socket. Believed only on calls that carry the service credential
    /// (``RPCContext/clientAddress``).
    public var clientAddress: String?

    public init(
        token: String? = nil, service: String? = nil, traceparent: String? = nil, timeoutMs: Int64? = nil,
        clientAddress: String? = nil
    ) {
        self.token = token
        self.service = service
        self.traceparent = traceparent
        self.timeoutMs = timeoutMs
        self.clientAddress = clientAddress
    }

    public var isEmpty: Bool {
        token == nil && service == nil && traceparent == nil && timeoutMs == nil && clientAddress == nil
    }

    /// The trace id part of `traceparent` (`00-<trace id>-<parent id>-<flags>`), for logs: 32
    /// lower-case hex digits, not all zero, as W3C trace context requires (anything else, which a
    /// client could fill with line breaks for the logs, starts a new trace instead).
    public var traceID: String? {
        guard let traceparent else { return nil }
        // Read on every call and for every call it makes: scanned, without splitting into parts.
        let bytes = traceparent.utf8
        var dashes = 0
        var first = bytes.startIndex
        var second = bytes.startIndex
        for index in bytes.indices where bytes[index] == UInt8(ascii: "-") {
            dashes += 1
            if dashes == 1 { first = index } else if dashes == 2 { second = index }
        }
        guard dashes == 3, first > bytes.startIndex, bytes.distance(from: first, to: second) == 33 else { return nil }
        let digits = bytes[bytes.index(after: first)..<second]
        guard digits.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            digits.contains(where: { $0 != UInt8(ascii: "0") })
        else { return nil }
        return String(traceparent[bytes.index(after: first)..<second])
    }

    /// This call's trace: the caller's when `traceparent` is valid, otherwise a new trace started
    /// here, so that every log line of the request and every call it makes downstream carry one id.
    public func continuingTrace() -> RequestMeta {
        guard traceID == nil else { return self }
        var meta = self
        meta.traceparent = Self.traceparent(traceID: nil)
        return meta
    }

    /// The `traceparent` for a call made on behalf of this one: the same trace id, a new parent
    /// (span) id, as W3C trace context asks of each hop.
    public var childTraceparent: String? {
        guard let traceID else { return traceparent }
        return Self.traceparent(traceID: traceID)
    }

    /// `00-<trace id>-<new span id>-01`, written in one go; with a new trace id when `traceID` is nil.
    private static func traceparent(traceID: String?) -> String {
        let length = 3 + (traceID?.utf8.count ?? 32) + 1 + 16 + 3
        return String(unsafeUninitializedCapacity: length) { buffer in
            var index = 0
            func put(_ bytes: some Sequence<UInt8>) {
                for byte in bytes {
                    buffer[index] = byte
                    index += 1
                }
            }
            /// `words` random 64-bit words as lower-case hex.
            func putRandomHex(words: Int) {
                for _ in 0..<words {
                    var word = TraceIDGenerator.next()
                    for _ in 0..<16 {
                        put(CollectionOfOne(hexDigits[Int(word >> 60)]))
                        word <<= 4
                    }
                }
            }
            put("00-".utf8)
            if let traceID { put(traceID.utf8) } else { putRandomHex(words: 2) }
            put("-".utf8)
            putRandomHex(words: 1)
            put("-01".utf8)
            return index
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// Random words for trace and span ids: SplitMix64 over an atomic counter seeded once from the
/// system generator. Ids must be unique and well spread, not secret, and a `getrandom(2)` call per
/// id (several per request) showed in profiles.
enum TraceIDGenerator {
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func next() -> UInt64 {
        var z = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
