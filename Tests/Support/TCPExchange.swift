#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One request and its reply over a short TCP connection to an IPv4 address, with plain blocking
/// sockets: no event loop to set up for a probe that takes a millisecond. Every step is bounded by
/// `timeout`, so a silent server costs at most that.
public enum TCPExchange {
    /// Sends `request`, then reads until `isComplete` accepts what arrived or the server closes.
    public static func run(
        host: String, port: Int, request: [UInt8], timeout: Duration,
        isComplete: ([UInt8]) -> Bool
    ) throws -> [UInt8] {
        var address = sockaddr_in.loopback(port: port)
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1
        else {
            throw TestSupportError("not an IPv4 address: \(host)")
        }
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw failure("socket", host, port) }
        defer { close(fd) }
        var limit = timeval(
            tv_sec: Int(timeout.components.seconds),
            tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        // SO_SNDTIMEO also bounds connect() on Linux.
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw failure("connect", host, port) }
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count
        else {
            throw failure("send", host, port)
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while !isComplete(reply) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw failure("recv", host, port) }
            reply += buffer[..<count]
        }
        return reply
    }

    private static func failure(_ call: String, _ host: String, _ port: Int) -> TestSupportError {
        TestSupportError("\(call) \(host):\(port): \(String(cString: strerror(errno)))")
    }
}
