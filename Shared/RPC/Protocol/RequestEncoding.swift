import AviaryJSON

/// Builds request frames, putting `_meta` into the params object.
public enum RequestEncoding {
    /// A request (a notification without `id`) as one line: the frame and its trailing newline.
    public static func request(id: Int64?, method: String, params: RawJSON, meta: RequestMeta) throws(RPCError) -> [UInt8] {
        var frame = Array(#"{"jsonrpc":"2.0","#.utf8)
        if let id { frame += Array(#""id":\#(id),"#.utf8) }
        frame += Array(#""method":"#.utf8)
        JSONText.appendString(method, to: &frame)
        frame += Array(#","params":"#.utf8)
        frame += try withMeta(params, meta)
        frame.append(UInt8(ascii: "}"))
        frame.append(UInt8(ascii: "\n"))
        return frame
    }

    private static func withMeta(_ params: RawJSON, _ meta: RequestMeta) throws(RPCError) -> [UInt8] {
        guard let open = params.bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }),
            params.bytes[open] == UInt8(ascii: "{")
        else {
            throw RPCError.invalidParams("params must encode as a JSON object")
        }
        if meta.isEmpty { return params.bytes }
        var bytes = Array(#"{"_meta":"#.utf8)
        bytes.reserveCapacity(params.bytes.count + 256)
        append(meta, to: &bytes)
        let rest = params.bytes[(open + 1)...]
        let isEmptyObject = rest.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "}")
        if !isEmptyObject { bytes.append(UInt8(ascii: ",")) }
        bytes += rest
        return bytes
    }

    /// `meta` (not empty) as a JSON object of the members it has, written by hand: it goes out with
    /// every call one service makes to another.
    private static func append(_ meta: RequestMeta, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "{"))
        func key(_ name: String) {
            // No value ends in `{`: only the first member follows it.
            if bytes.last != UInt8(ascii: "{") { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes += name.utf8
            bytes += #"":"#.utf8
        }
        func member(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONText.appendString(value, to: &bytes)
        }
        member("token", meta.token)
        member("service", meta.service)
        member("traceparent", meta.traceparent)
        member("clientAddress", meta.clientAddress)
        if let timeoutMs = meta.timeoutMs {
            key("timeoutMs")
            bytes += String(timeoutMs).utf8
        }
        bytes.append(UInt8(ascii: "}"))
    }
}
