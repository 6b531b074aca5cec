import AviaryJSON
import Logging

// What the JSON module's failures are on the wire: the JSON module knows no RPC error.

extension JSONScanner.Failure {
    /// The parse error (-32700) a frame that fails so is answered with.
    var rpcError: RPCError {
        switch self {
        case .invalidUTF8: RPCError.parseError("parse error: the frame is not valid UTF-8")
        case .malformed: RPCError.parseError()
        case .tooDeep:
            RPCError.parseError(
                "parse error: the frame's arrays and objects nest deeper than \(JSONScanner.maximumDepth) levels (the limit)")
        }
    }
}

extension JSONSplice {
    /// The elements of the array another service answered `method` with. Any other answer is that
    /// service misbehaving: logged, and `unavailable` (retry later) for the caller.
    public static func elements(ofAnswer bytes: [UInt8], to method: String, logger: Logger) throws(RPCError) -> [Range<Int>] {
        guard let elements = elements(of: bytes) else {
            logger.error("\(method) answered something other than an array")
            throw RPCError.unavailable("\(method) answered something unreadable; retry shortly")
        }
        return elements
    }
}
