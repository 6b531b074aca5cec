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

    public init(token: String? = nil, service: String? = nil, traceparent: String? = nil, timeoutMs: Int64? = nil) {
        self.token = token
        self.service = service
        self.traceparent = traceparent
        self.timeoutMs = timeoutMs
    }

    public var isEmpty: Bool { token == nil && service == nil && traceparent == nil && timeoutMs == nil }

    /// The trace id part of `traceparent` (`00-<trace id>-<parent id>-<flags>`), for logs.
    public var traceID: String? {
        guard let traceparent else { return nil }
        let parts = traceparent.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32 else { return nil }
        return String(parts[1])
    }

    /// This call's trace: the caller's when `traceparent` is valid, otherwise a new trace started
    /// here, so that every log line of the request and every call it makes downstream carry one id.
    public func continuingTrace() -> RequestMeta {
        guard traceID == nil else { return self }
        var meta = self
        meta.traceparent = "00-\(Self.randomHex(bytes: 16))-\(Self.randomHex(bytes: 8))-01"
        return meta
    }

    /// The `traceparent` for a call made on behalf of this one: the same trace id, a new parent
    /// (span) id, as W3C trace context asks of each hop.
    public var childTraceparent: String? {
        guard let traceID else { return traceparent }
        return "00-\(traceID)-\(Self.randomHex(bytes: 8))-01"
    }

    /// `bytes` random bytes as lower-case hex (at most 16: trace ids and span ids).
    private static func randomHex(bytes: Int) -> String {
        var text = ""
        text.reserveCapacity(bytes * 2)
        for _ in 0..<(bytes + 7) / 8 {
            let word = String(TraceIDGenerator.next(), radix: 16)
            text += String(repeating: "0", count: 16 - word.count) + word
        }
        return String(text.prefix(bytes * 2))
    }
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
