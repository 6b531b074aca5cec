import Locking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where finished log lines go: standard error, or a closure (tests capture lines with one).
public struct LogOutput: Sendable {
    /// Receives one complete line, newline included.
    let write: @Sendable (_ line: [UInt8]) -> Void

    /// An output that hands every line, newline included, to `write`.
    public init(_ write: @escaping @Sendable (_ line: [UInt8]) -> Void) {
        self.write = write
    }

    /// Standard error, one `write(2)` per line under a lock so lines from threads never interleave.
    public static let standardError = LogOutput { line in
        standardErrorLock.withLock { _ in writeFully(STDERR_FILENO, line) }
    }

    private static let standardErrorLock = Locked(())
}

/// Writes all of `bytes`, retrying short writes and EINTR; gives up silently when the descriptor
/// fails, since a logger has nowhere to report that.
private func writeFully(_ descriptor: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, base + offset, buffer.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
