import AviaryJSON
import Foundation

/// Hands JSON-RPC requests on to whoever answers them, as the public edge does for apps: a frame
/// (a request or a batch) is read as the router reads it, each request's params are passed on
/// without the `_meta` the client sent, and the answers come back under the client's ids.
///
/// What the client may say in `_meta` (its token, trace and budget) is read into ``Call/meta``;
/// anything else there, a `service` credential above all, is dropped, so that only the relay
/// decides which credential a request travels with.
public enum RPCRelay {
    /// One request of the client's frame.
    public struct Call: Sendable {
        public let method: String
        /// The params object, without `_meta`.
        public let params: RawJSON
        /// The client's token, traceparent and timeoutMs; never its `service` or `clientAddress`.
        public let meta: RequestMeta
    }

    /// Answers one call: its result, or the error to answer with.
    public typealias Forward = @Sendable (Call) async -> Result<RawJSON, RPCError>

    /// Answers `frame` through `forward`; nil when nothing is to be sent back (notifications only).
    /// A frame that is not JSON is answered with a parse error (-32700, id null), as a service would.
    public static func respond(to frame: Data, forward: @escaping Forward) async -> Data? {
        await RPCRouter.answer(frame) { request in await respondToSingle(request, forward: forward) }
    }

    /// How many requests `frame` holds (a batch's length, else 1), for limits that count calls;
    /// nil when it is not JSON at all (an HTTP front answers that with 400). One scan of the frame.
    public static func requestCount(_ frame: Data) -> Int? {
        frame.withUnsafeBytes { bytes -> Int? in
            var scanner = JSONScanner(bytes)
            do {
                if RPCRouter.isBatch(frame) { return max(1, try scanner.arrayElements().count) }
                try scanner.skipValue(depth: 0)
                try scanner.expectEnd()
                return 1
            } catch {
                return nil
            }
        }
    }

    /// A response frame for a request that never reached ``respond(to:forward:)``: an error under `id`.
    public static func errorResponse(_ error: RPCError, id: JSONValue = .null) -> Data {
        ResponseEncoding.error(error, id: id)
    }

    /// A notification frame (`method`, `params`), as a server pushes it.
    public static func notification(method: String, params: RawJSON) -> Data {
        ResponseEncoding.notification(method: method, params: params)
    }

    private static func respondToSingle(_ frame: Data, forward: Forward) async -> Data? {
        await RPCRouter.answerSingle(frame) { header in
            if case .array = header.params {
                return .failure(RPCRouter.positionalParams)
            }
            let params = header.paramsRange.map { withoutMeta(RPCRouter.slice(frame, $0)) } ?? .emptyObject
            let meta = RequestMeta(token: header.meta.token, traceparent: header.meta.traceparent, timeoutMs: header.meta.timeoutMs)
            return await forward(Call(method: header.method ?? "", params: params, meta: meta))
        }
    }

    /// The params object without its `_meta` member; its other members' bytes are kept as they came.
    static func withoutMeta(_ params: Data) -> RawJSON {
        let bytes = Array(params)
        guard JSONSplice.members(of: bytes)?.contains(where: { $0.key == "_meta" }) == true,
            let kept = JSONSplice.rewritingMembers(of: bytes, { key, value in key == "_meta" ? nil : Array(value) })
        else { return RawJSON(unchecked: bytes) }
        return RawJSON(unchecked: kept)
    }
}
