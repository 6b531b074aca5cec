import AviaryJSON
import Foundation

/// Builds response frames by splicing already-encoded parts, so a result is encoded exactly once.
enum ResponseEncoding {
    static func result(_ result: RawJSON, id: JSONValue) -> Data {
        var data = Data()
        data.reserveCapacity(result.bytes.count + 48)
        data.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        appendID(id, to: &data)
        data.append(contentsOf: #","result":"#.utf8)
        data.append(contentsOf: result.bytes)
        data.append(UInt8(ascii: "}"))
        return data
    }

    static func error(_ error: RPCError, id: JSONValue) -> Data {
        var data = Data()
        data.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        appendID(id, to: &data)
        data.append(contentsOf: #","error":"#.utf8)
        data.append(contentsOf: (try? WireEncoding.encode(error)) ?? Array(#"{"code":-32603,"message":"internal error"}"#.utf8))
        data.append(UInt8(ascii: "}"))
        return data
    }

    /// A frame with no request to answer (id null) that tells why, with its newline: for a
    /// connection about to be closed.
    static func line(_ error: RPCError) -> [UInt8] {
        Array(self.error(error, id: .null)) + [UInt8(ascii: "\n")]
    }

    static func batch(_ responses: [Data]) -> Data {
        var data = Data([UInt8(ascii: "[")])
        for (index, response) in responses.enumerated() {
            if index > 0 { data.append(UInt8(ascii: ",")) }
            data.append(response)
        }
        data.append(UInt8(ascii: "]"))
        return data
    }

    /// A notification the server pushes (`method`, `params`), for subscriptions.
    static func notification(method: String, params: RawJSON) -> Data {
        var data = Data()
        data.reserveCapacity(params.bytes.count + method.utf8.count + 40)
        data.append(contentsOf: #"{"jsonrpc":"2.0","method":"#.utf8)
        // A plain method name ("messaging.event") is copied as it is, which the client's reader expects.
        JSONText.appendString(method, to: &data)
        data.append(contentsOf: #","params":"#.utf8)
        data.append(contentsOf: params.bytes)
        data.append(UInt8(ascii: "}"))
        return data
    }

    private static func appendID(_ id: JSONValue, to data: inout Data) {
        if case .int(let value) = id {
            data.append(contentsOf: String(value).utf8)
        } else {
            data.append(contentsOf: (try? WireEncoding.encode(id)) ?? Array("null".utf8))
        }
    }
}
