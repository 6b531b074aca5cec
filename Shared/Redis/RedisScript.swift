import ChannelSupport
import Crypto
import Foundation

/// A Lua script run with `RedisClient.evaluate`, sent by SHA-1 (`EVALSHA`) and in full only when the
/// server does not have it cached yet.
public struct RedisScript: Sendable, Hashable {
    /// The Lua source.
    public let source: String
    /// The lowercase hex SHA-1 of `source`, the name Redis caches the script under.
    public let sha1: String

    /// Wraps `source` and computes its SHA-1 once.
    public init(_ source: String) {
        self.source = source
        self.sha1 = Insecure.SHA1.hash(data: Array(source.utf8)).hexEncoded
    }
}
