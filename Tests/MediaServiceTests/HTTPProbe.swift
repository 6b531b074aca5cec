import Foundation
import Glibc

/// A plain HTTP/1.1 client for `GET`/`HEAD /media/<id>`: one request per connection
/// (`Connection: close`), headers as sent, the body as bytes. Blocking sockets, bounded by a
/// receive timeout; run it off the cooperative pool.
enum HTTPProbe {
    struct Response: Sendable {
        var status: Int
        /// Header names lower-cased.
        var headers: [String: String]
        var body: [UInt8]
    }

    static func get(
        port: Int, _ target: String, method: String = "GET", headers: [String: String] = [:]
    ) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try exchange(port: port, target: target, method: method, headers: headers) })
            }
        }
    }

    private static func exchange(port: Int, target: String, method: String, headers: [String: String]) throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError("socket failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ProbeError("connect to port \(port) failed") }
        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, 0) == bytes.count else { throw ProbeError("send failed") }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 { throw ProbeError("recv failed (errno \(errno))") }
            if count == 0 { break }
            reply += buffer[0..<count]
        }
        return try parse(reply)
    }

    private static func parse(_ reply: [UInt8]) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(0, reply.count - 4))).first(where: { Array(reply[$0..<min($0 + 4, reply.count)]) == separator })
        else { throw ProbeError("no header end in \(reply.count) bytes") }
        let lines = String(decoding: reply[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines[0].split(separator: " ")
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else { throw ProbeError("bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(reply[(end + 4)...]))
    }
}

struct ProbeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
