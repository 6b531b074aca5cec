#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

import Foundation
import Locking

/// Ports this test process handed out, so that no two callers get the same one.
private let handedOut = Locked<Set<Int>>([])

/// A TCP port on 127.0.0.1 that was free a moment ago, for a server a test starts.
///
/// It comes from below the kernel's ephemeral range (`ip_local_port_range`): ports the kernel hands
/// to `bind(0)` listeners and to outgoing connections are never there, so the many services of a
/// test run cannot take each other's port between this call and their bind. No port is handed out
/// twice in one process. Other programs on the machine may still take it, which is rare.
public func freePort() throws -> Int {
    let range = belowEphemeralRange()
    for _ in 0..<500 {
        let port = Int.random(in: range)
        let claimed = handedOut.withLock { ports in ports.insert(port).inserted }
        guard claimed else { continue }
        if (try? bindLoopback(port: port)) != nil { return port }
    }
    let port = try bindLoopback(port: 0)
    handedOut.withLock { _ = $0.insert(port) }
    return port
}

/// A free port whose neighbour `offset` above is free too, both below the ephemeral range, for a
/// Redis Cluster node (its cluster bus listens on the port + 10000). Neither is handed out again.
public func freePort(withPartnerAt offset: Int) throws -> Int {
    let range = belowEphemeralRange()
    let ports = range.lowerBound...max(range.lowerBound, range.upperBound - offset)
    for _ in 0..<500 {
        let port = Int.random(in: ports)
        let claimed = handedOut.withLock { handed in
            guard !handed.contains(port), !handed.contains(port + offset) else { return false }
            handed.formUnion([port, port + offset])
            return true
        }
        guard claimed else { continue }
        if (try? bindLoopback(port: port)) != nil, (try? bindLoopback(port: port + offset)) != nil { return port }
    }
    throw TestSupportError("no two free ports \(offset) apart below the ephemeral range")
}

/// 10000 up to the start of the ephemeral range (32768 on Linux by default).
private func belowEphemeralRange() -> ClosedRange<Int> {
    let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
    let low = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32768
    return 10000...max(10001, low - 1)
}

/// Binds 127.0.0.1:`port` (0: any) and closes it again; the port bound.
private func bindLoopback(port: Int) throws -> Int {
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw TestSupportError("socket(): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in.loopback(port: port)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else {
        throw TestSupportError("bind(127.0.0.1:\(port)): \(String(cString: strerror(errno)))")
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension sockaddr_in {
    /// 127.0.0.1:`port`.
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
