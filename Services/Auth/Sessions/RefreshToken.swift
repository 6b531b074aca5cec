import Crypto
import Foundation

/// An opaque refresh token: 32 random bytes, base64url without padding. Only its SHA-256 is stored,
/// so a copy of the database does not hold tokens anyone could present.
struct RefreshToken: Sendable {
    let token: String
    let hash: [UInt8]

    static func generate() -> RefreshToken {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let token = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return RefreshToken(token: token, hash: hash(of: token))
    }

    /// The stored form of a token a client presents; nil when it cannot be one this service made.
    static func storedHash(of presented: String) -> [UInt8]? {
        guard presented.utf8.count == 43,
            presented.utf8.allSatisfy({ byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            })
        else { return nil }
        return hash(of: presented)
    }

    private static func hash(of token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }
}
