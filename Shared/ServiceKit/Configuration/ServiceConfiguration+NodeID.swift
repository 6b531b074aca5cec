#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ServiceConfiguration {
    /// A node id from the host name and process id, so that processes on one machine, and most
    /// machines, differ without configuration. FNV-1a, because Swift's `Hasher` is seeded per process.
    static func derivedNodeID(hostName: String = currentHostName(), pid: Int32 = getpid()) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(hostName)/\(pid)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return Int(hash % UInt64(SnowflakeGenerator.maxNodeID + 1))
    }

    /// `gethostname(2)`, which unlike `ProcessInfo.hostName` never waits for DNS.
    static func currentHostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
