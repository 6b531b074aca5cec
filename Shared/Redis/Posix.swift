#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small wrappers over the POSIX calls the hiredis wrappers need.
enum Posix {
    /// hiredis writes with `write(2)`, which raises SIGPIPE on a socket the server has closed; like
    /// NIOPosix on Linux, ignore it process-wide (once) so a dead server is an error, not a crash.
    static let ignoreSIGPIPE: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()

    /// The calling thread's `errno`, read right after a failed call.
    static var errorNumber: Int32 {
        errno
    }

    /// Waits until one of `descriptors` has an event or `timeout` passes (`nil`: forever); retries on
    /// EINTR. Returns the `revents` of each descriptor, in order.
    static func poll(_ descriptors: [(fd: Int32, events: Int16)], timeout: Duration?) -> [Int16] {
        var fds = descriptors.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        let milliseconds = timeout.map { duration -> Int32 in
            let (seconds, attoseconds) = duration.components
            let total = max(0, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            return Int32(clamping: total)
        }
        while true {
            let result = fds.withUnsafeMutableBufferPointer { buffer in
                #if canImport(Glibc)
                    Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), milliseconds ?? -1)
                #else
                    Darwin.poll(buffer.baseAddress, nfds_t(buffer.count), milliseconds ?? -1)
                #endif
            }
            if result >= 0 || errno != EINTR { break }
        }
        return fds.map(\.revents)
    }

    /// A non-blocking, close-on-exec pipe: `(read, write)`.
    static func makePipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { fatalError("pipe() failed: errno \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        return (fds[0], fds[1])
    }

    static func writeByte(_ fd: Int32) {
        var byte: UInt8 = 1
        // EAGAIN means the pipe is already full of wake-ups: nothing is lost.
        _ = write(fd, &byte, 1)
    }

    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }
}

extension timeval {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: .init(seconds), tv_usec: .init(attoseconds / 1_000_000_000_000))
    }
}
