import AviaryJSON
import Foundation

/// A response frame as the client received it: its result stays encoded until the caller decodes it.
public struct RPCResponse: Sendable {
    public let frame: Data
    /// Where the result starts in a success response laid out as Aviary servers write it
    /// (`{"jsonrpc":"2.0","id":<n>,"result":<result>}`); nil for any other frame.
    let resultOffset: Int?

    /// A response frame read from any transport (a WebSocket message, say).
    public init(frame: Data) {
        self.init(frame: frame, resultOffset: nil)
    }

    init(frame: Data, resultOffset: Int?) {
        self.frame = frame
        self.resultOffset = resultOffset
    }

    /// The result as raw JSON, or the error the server answered with. A result in the layout Aviary
    /// servers write is sliced out of the frame, so a large result passes through undecoded.
    public func result() throws(RPCError) -> RawJSON {
        if let resultOffset {
            return RawJSON(unchecked: Array(frame[(frame.startIndex + resultOffset)..<(frame.endIndex - 1)]))
        }
        let envelope: ResponseHeader
        do {
            envelope = try JSONDecoder().decode(ResponseHeader.self, from: frame)
        } catch {
            throw RPCError.internalError("the server's response is not valid JSON-RPC")
        }
        if let error = envelope.error { throw error }
        return envelope.result ?? .null
    }

    /// The result as `type`; as `RawJSON`, the result's bytes as they came (see ``result()``).
    public func decode<Result: Decodable>(_ type: Result.Type) throws -> Result {
        if type == RawJSON.self, let raw = try result() as? Result { return raw }
        if let resultOffset {
            return try WireDecoding.decode(type, from: frame[(frame.startIndex + resultOffset)..<(frame.endIndex - 1)])
        }
        let envelope = try JSONCoding.decoder().decode(TypedResponse<Result>.self, from: frame)
        if let error = envelope.error { throw error }
        guard let result = envelope.result else {
            throw RPCError.internalError("the server's response has neither result nor error")
        }
        return result
    }
}

/// The parts of an incoming frame the client routes by; result and params are left undecoded.
struct ResponseRoute: Decodable {
    var id: JSONValue?
    var method: String?
    var error: RPCError?
}

/// A whole response or notification, read only where raw JSON is asked for (tools, subscriptions).
struct ResponseHeader: Decodable {
    var error: RPCError?
    var result: RawJSON?
    var params: RawJSON?
}

private struct TypedResponse<Result: Decodable>: Decodable {
    var result: Result?
    var error: RPCError?
}

/// A notification the server pushed (a subscription event).
public struct RPCNotification: Sendable {
    public let method: String
    public let params: RawJSON
}
