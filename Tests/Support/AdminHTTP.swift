import Foundation

/// A minimal HTTP/1.0 client for the services' admin port (`/healthz`, `/readyz`, `/metrics`) and
/// for raw calls to the gateway, so tests can probe them without an HTTP library: a connection per
/// request, closed by the server after its answer.
public enum AdminHTTP {
    /// A response's status code and body (decoded as UTF-8).
    public struct Response: Sendable {
        /// The status code: 200, 503, …
        public let status: Int
        /// The body, decoded as UTF-8.
        public let body: String
    }

    /// `GET path` on host:port. Blocks the calling thread for at most `timeout` per step.
    public static func get(
        _ path: String, host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(2)
    ) throws -> Response {
        try exchange("GET", path, host: host, port: port, timeout: timeout)
    }

    /// `POST path` of `body` on host:port, with `headers`. Blocks the calling thread for at most
    /// `timeout` per step.
    public static func post(
        _ path: String, body: String, headers: [String: String] = [:], host: String = "127.0.0.1", port: Int,
        timeout: Duration = .seconds(10)
    ) throws -> Response {
        try exchange("POST", path, body: body, headers: headers, host: host, port: port, timeout: timeout)
    }

    private static func exchange(
        _ method: String, _ path: String, body: String = "", headers: [String: String] = [:], host: String, port: Int,
        timeout: Duration
    ) throws -> Response {
        var request = "\(method) \(path) HTTP/1.0\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if method == "POST" { request += "Content-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + body
        let reply = try TCPExchange.run(
            host: host, port: port, request: Array(request.utf8), timeout: timeout,
            isComplete: { parse($0)?.complete ?? false })
        guard let response = parse(reply) else {
            let text = String(decoding: reply, as: UTF8.self)
            throw TestSupportError("\(method) \(path) on \(host):\(port): not an HTTP response: \(text)")
        }
        return Response(status: response.status, body: response.body)
    }

    /// The status and body once the header has arrived; `complete` once the body is as long as
    /// Content-Length says (without one, the body ends when the server closes).
    private static func parse(_ bytes: [UInt8]) -> (status: Int, body: String, complete: Bool)? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let headerEnd = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<headerEnd.lowerBound].split(separator: "\r\n")
        let statusWords = lines.first?.split(separator: " ") ?? []
        guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/"),
            let status = Int(statusWords[1])
        else {
            return nil
        }
        let body = String(text[headerEnd.upperBound...])
        let length = lines.dropFirst().lazy.compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first
        return (status, body, length.map { body.utf8.count >= $0 } ?? false)
    }
}
