import Foundation
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of one server or several (a load balancer: each connection
/// goes to the next target in turn, or past it to the next that accepts). It may close its first
/// `dropCount` connections as soon as a request arrives, without forwarding it: the client sees its
/// connection die after the request was written, as when a server crashes mid-command. A test may
/// also slow the link (``delay``) or cut it (``isCut``), for a network that falters.
public final class TCPProxy: Sendable {
    public let port: Int
    private let listener: Int32
    private let dropsLeft: Locked<Int>
    private let next = Locked(0)
    private let link = Locked(Link())

    private struct Link {
        var delay = Duration.zero
        var isCut = false
        /// The sockets of the connections being forwarded, both sides.
        var open: Set<Int32> = []
    }

    /// How long each piece of data waits before it is passed on, either way.
    public var delay: Duration {
        get { link.withLock { $0.delay } }
        set { link.withLock { $0.delay = newValue } }
    }

    /// While true, every connection is cut at once (its sockets shut down) and new ones are closed
    /// as soon as they are accepted, before anything is read: a peer that cannot be reached.
    public var isCut: Bool {
        get { link.withLock { $0.isCut } }
        set {
            let cut = link.withLock { link in
                link.isCut = newValue
                return newValue ? link.open : []
            }
            for socket in cut { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    public init(targetPorts: [Int], dropCount: Int = 0) throws {
        dropsLeft = Locked(dropCount)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        guard listening else { throw TestSupportError("proxy: cannot listen: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop(targetPorts: targetPorts) }
    }

    /// Stops accepting; connections already forwarded end when either side closes.
    public func close() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop(targetPorts: [Int]) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                Glibc.close(listener)
                return
            }
            if isCut {
                Glibc.close(client)
                continue
            }
            let drop = dropsLeft.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0
            }
            if drop {
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &buffer, buffer.count)
                Glibc.close(client)
                continue
            }
            let first = next.withLock { next in
                defer { next += 1 }
                return next
            }
            let upstream = (0..<targetPorts.count).lazy.compactMap { Self.connect(to: targetPorts[(first + $0) % targetPorts.count]) }.first
            guard let upstream else {
                Glibc.close(client)
                continue
            }
            link.withLock { $0.open.formUnion([client, upstream]) }
            // Each direction is pumped by its own thread; the second to finish closes both sockets.
            let pumps = PumpCount()
            for (from, to) in [(client, upstream), (upstream, client)] {
                Thread.detachNewThread { [self] in
                    pump(from: from, to: to)
                    shutdown(to, Int32(SHUT_WR))
                    if pumps.finishOne() {
                        link.withLock { $0.open.subtract([client, upstream]) }
                        Glibc.close(client)
                        Glibc.close(upstream)
                    }
                }
            }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { return }
            let delay = self.delay
            if delay > .zero { usleep(UInt32(delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000)) }
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes {
                    write(destination, $0.baseAddress, $0.count)
                }
                guard written > 0 else { return }
                sent += written
            }
        }
    }

    /// A socket connected to 127.0.0.1:`port`, nil when nothing accepts there.
    private static func connect(to port: Int) -> Int32? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if connected { return upstream }
        Glibc.close(upstream)
        return nil
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

private final class PumpCount: Sendable {
    private let finished = Locked(0)

    /// Whether this was the last of the two pumps.
    func finishOne() -> Bool {
        finished.withLock { count in
            count += 1
            return count == 2
        }
    }
}
