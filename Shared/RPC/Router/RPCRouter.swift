import AviaryJSON
import Foundation
import Logging
import Metrics

/// The methods of one service and the dispatch of frames to them. Built once at start-up
/// (`register` is mutating), then shared read-only by every connection; it needs no socket,
/// so tests drive it directly with `respond(to:connection:)`.
public struct RPCRouter: Sendable {
    /// One registered method.
    public struct Method: Sendable {
        public let name: String
        public let summary: String
        public let access: RPCAccess
        public let paramsSchema: JSONValue
        public let resultSchema: JSONValue
        let invoke: @Sendable (_ params: Data, _ context: RPCContext) async throws -> RawJSON
        /// The router's logger with `rpc.method` set, made once rather than on every call.
        let logger: Logger
        let calls: Counter
        let latency: Metrics.Timer
    }

    public let service: String
    public let version: String
    public let logger: Logger
    public var authenticator: (any RPCAuthenticator)?
    public private(set) var methods: [String: Method] = [:]

    public init(service: String, version: String, logger: Logger, authenticator: (any RPCAuthenticator)? = nil) {
        self.service = service
        self.version = version
        self.logger = logger
        self.authenticator = authenticator
    }

    /// Registers a typed handler. Params are decoded from the request's `params` object (an omitted
    /// `params` decodes as `{}`); a decoding failure becomes -32602 naming the parameter.
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ name: String,
        summary: String,
        access: RPCAccess = .user,
        params: Params.Type = Params.self,
        result: Result.Type = Result.self,
        resultShape: Any.Type? = nil,
        handler: @escaping @Sendable (Params, RPCContext) async throws -> Result
    ) {
        precondition(methods[name] == nil, "method \(name) registered twice")
        let dimensions = [("rpc.system", "jsonrpc"), ("rpc.service", service), ("rpc.method", name)]
        var methodLogger = logger
        methodLogger[metadataKey: "rpc.method"] = .string(name)
        methods[name] = Method(
            name: name, summary: summary, access: access,
            paramsSchema: JSONSchema.of(Params.self), resultSchema: JSONSchema.of(resultShape ?? Result.self),
            invoke: { json, context in
                let params: Params
                do {
                    params = try WireDecoding.decode(Params.self, from: json)
                } catch let error as DecodingError {
                    let (message, field) = error.parameterMessage
                    throw RPCError.invalidParams(message, field: field)
                }
                let result = try await handler(params, context)
                if let raw = result as? RawJSON { return raw }
                return try RawJSON(encoding: result)
            },
            logger: methodLogger,
            calls: Counter(label: "rpc_server_requests_total", dimensions: dimensions),
            latency: Metrics.Timer(label: "rpc_server_duration_seconds", dimensions: dimensions))
    }

    /// The most requests a batch may hold. A batch runs its requests at once and answers them in one
    /// frame, outside the per-connection limit of calls in flight: a frame of a few hundred KiB could
    /// otherwise start tens of thousands of calls and build an answer of hundreds of MiB (15,000
    /// `rpc.discover` calls in 784 KB asked for 285 MB).
    public static let maxBatchLength = 100

    /// Answers one frame: a request, a notification or a batch. Returns the response text
    /// (without the trailing newline), or `nil` when nothing is to be sent back.
    public func respond(to frame: Data, connection: RPCConnection? = nil) async -> Data? {
        await Self.answer(frame) { request in await respondToSingle(request, connection: connection) }
    }

    /// Answers a frame that may be a batch: a single request by `single`; each request of a batch by
    /// `single` from its own bytes, all at once, the answers joined in the batch's order. Nothing in
    /// a request is decoded twice, and a value no Swift type holds (1e400) concerns only its request.
    /// Returns nil when nothing is to be sent back (notifications only).
    static func answer(_ frame: Data, single: @escaping @Sendable (Data) async -> Data?) async -> Data? {
        guard frame.contains(where: { !Self.isWhitespace($0) }) else { return nil }
        guard Self.isBatch(frame) else { return await single(frame) }
        let scanned = frame.withUnsafeBytes { bytes -> Result<[Range<Int>], JSONScanner.Failure> in
            var scanner = JSONScanner(bytes)
            return Result { () throws(JSONScanner.Failure) in try scanner.arrayElements() }
        }
        let elements: [Range<Int>]
        switch scanned {
        case .success(let ranges): elements = ranges
        case .failure(let failure): return ResponseEncoding.error(failure.rpcError, id: .null)
        }
        if elements.isEmpty {
            return ResponseEncoding.error(RPCError.invalidRequest("an empty batch is not a request"), id: .null)
        }
        guard elements.count <= Self.maxBatchLength else {
            return ResponseEncoding.error(
                RPCError.invalidRequest(
                    "a batch holds at most \(Self.maxBatchLength) requests; this one has \(elements.count)"),
                id: .null)
        }
        let responses = await withTaskGroup(of: (Int, Data?).self) { group in
            for (index, element) in elements.enumerated() {
                let elementFrame = Self.slice(frame, element)
                group.addTask { (index, await single(elementFrame)) }
            }
            var collected: [(Int, Data)] = []
            for await (index, response) in group {
                if let response { collected.append((index, response)) }
            }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return responses.isEmpty ? nil : ResponseEncoding.batch(responses)
    }

    private func respondToSingle(_ frame: Data, connection: RPCConnection?) async -> Data? {
        await Self.answerSingle(frame) { header in await dispatch(header, frame: frame, connection: connection) }
    }

    /// Answers one request: a frame that is not JSON or not a request as the contract says (-32700,
    /// -32600), else what `handle` makes of it, under its id; nothing for a notification.
    static func answerSingle(
        _ frame: Data, _ handle: (RequestHeader) async -> Swift.Result<RawJSON, RPCError>
    ) async -> Data? {
        let header: RequestHeader
        do {
            header = try RequestHeader.decode(frame)
        } catch {
            return ResponseEncoding.error(error, id: .null)
        }
        if let problem = header.problem {
            return ResponseEncoding.error(.invalidRequest("invalid request: \(problem)"), id: header.id ?? .null)
        }
        let outcome = await handle(header)
        guard let id = header.id else { return nil }
        switch outcome {
        case .success(let result): return ResponseEncoding.result(result, id: id)
        case .failure(let error): return ResponseEncoding.error(error, id: id)
        }
    }

    private func dispatch(_ header: RequestHeader, frame: Data, connection: RPCConnection?) async -> Swift.Result<
        RawJSON, RPCError
    > {
        let name = header.method ?? ""
        let method = methods[name]
        let outcome: Swift.Result<RawJSON, RPCError>
        switch header.params {
        case .array:
            outcome = .failure(RPCRouter.positionalParams)
        case .absent, .object, .other:  // .other never gets here: RequestHeader reports it as invalid.
            if name == "rpc.discover" {
                outcome = Result { try RawJSON(encoding: OpenRPCDocument(router: self)) }.mapError { _ in .internalError() }
            } else if let method {
                let started = ContinuousClock.now
                outcome = await call(method, header: header, frame: frame, connection: connection)
                method.latency.recordNanoseconds(Self.nanoseconds(since: started))
                method.calls.increment()
            } else {
                outcome = .failure(.methodNotFound(name))
            }
        }
        if case .failure(let error) = outcome {
            // Unknown names share one label, so a client cannot grow the metric set without bound.
            let label = method != nil || name == "rpc.discover" ? name : "(unknown)"
            Counter(
                label: "rpc_server_errors_total",
                dimensions: [("rpc.service", service), ("rpc.method", label), ("rpc.jsonrpc.error_code", String(error.code))]
            ).increment()
        }
        return outcome
    }

    private func call(_ method: Method, header: RequestHeader, frame: Data, connection: RPCConnection?) async
        -> Swift.Result<RawJSON, RPCError>
    {
        let meta = header.meta.continuingTrace()
        var logger = method.logger
        if let traceID = meta.traceID { logger[metadataKey: "trace_id"] = .string(traceID) }
        do {
            let isService = meta.service.map { authenticator?.isServiceCredential($0) ?? false } ?? false
            var principal: RPCPrincipal?
            var tokenUnchecked = false
            switch method.access {
            case .internal:
                guard isService else {
                    throw RPCError.forbidden("\(method.name) is internal: it needs the service credential in _meta.service")
                }
            case .user:
                guard let token = meta.token else { throw RPCError.unauthenticated("\(method.name) needs an access token in _meta.token") }
                principal = try await authenticate(token)
            case .anonymous:
                // A stale token must not block what anyone may call (auth.refresh with an expired access
                // token): the caller is then anonymous. So is one whose token cannot be checked right
                // now (Redis down), which the handler is told (`tokenUnchecked`).
                if let token = meta.token {
                    do {
                        principal = try await authenticate(token)
                    } catch {
                        tokenUnchecked = error.reason != "unauthenticated"
                    }
                }
            }
            var deadline: ContinuousClock.Instant?
            if let timeoutMs = meta.timeoutMs {
                guard timeoutMs > 0 else { throw RPCError.timeout("the call's time budget (_meta.timeoutMs) was already spent") }
                deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
            }
            let context = RPCContext(
                method: method.name, meta: meta, logger: logger, deadline: deadline, principal: principal,
                isService: isService, connection: connection, tokenUnchecked: tokenUnchecked)
            // The budget is checked before work starts and travels downstream; the caller's own timer ends
            // the wait, so racing every handler against a timer here would only cost time.
            let params = header.paramsRange.map { Self.slice(frame, $0) }
            return .success(try await method.invoke(params ?? Self.emptyParams, context))
        } catch let error as any RPCErrorConvertible {
            let rpcError = error.rpcError
            if rpcError.code == -32603 || rpcError.code == -32050 {
                logger.error("call failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            return .failure(rpcError)
        } catch is CancellationError {
            return .failure(.unavailable("the call was cancelled: the server is shutting down, or the caller hung up"))
        } catch {
            logger.error("call failed with an unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return .failure(.internalError())
        }
    }

    private func authenticate(_ token: String) async throws(RPCError) -> RPCPrincipal {
        guard let authenticator else { throw .unauthenticated("this service does not accept access tokens") }
        return try await authenticator.authenticate(token: token)
    }

    private static func nanoseconds(since start: ContinuousClock.Instant) -> Int64 {
        let elapsed = ContinuousClock.now - start
        return elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
    }

    /// The bytes of `frame` at `range`, counted from its start (a frame may itself be a slice).
    static func slice(_ frame: Data, _ range: Range<Int>) -> Data {
        frame[(frame.startIndex + range.lowerBound)..<(frame.startIndex + range.upperBound)]
    }

    /// The answer to params sent as an array.
    static let positionalParams = RPCError.invalidParams("params must be an object; positional (array) params are not accepted")

    /// What an omitted `params` decodes from.
    static let emptyParams = Data("{}".utf8)

    /// Whether `frame` is a batch: its first byte besides whitespace opens an array.
    static func isBatch(_ frame: some Collection<UInt8>) -> Bool {
        frame.first { !isWhitespace($0) } == UInt8(ascii: "[")
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
