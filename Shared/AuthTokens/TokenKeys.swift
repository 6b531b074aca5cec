import ChannelSupport
import Crypto
import Foundation

/// The Ed25519 keys of access tokens. Only auth holds a signing key; every service holds the
/// public keys (the current one, and during a rotation the previous ones), each named by a key id
/// derived from the key itself.
public struct TokenKeys: Sendable {
    public var signingKey: Curve25519.Signing.PrivateKey?
    public var publicKeys: [String: Curve25519.Signing.PublicKey]

    /// Keys from a signing key's 32-byte seed (its public key is accepted too) and extra public keys.
    public init(signingSeed: [UInt8]?, extraPublicKeys: [Curve25519.Signing.PublicKey] = []) throws {
        signingKey = try signingSeed.map { try Curve25519.Signing.PrivateKey(rawRepresentation: $0) }
        var keys: [String: Curve25519.Signing.PublicKey] = [:]
        for key in extraPublicKeys + [signingKey?.publicKey].compactMap({ $0 }) {
            keys[Self.keyID(of: key)] = key
        }
        publicKeys = keys
    }

    /// A short, stable name for a public key: the first 8 bytes of its SHA-256, hex.
    public static func keyID(of key: Curve25519.Signing.PublicKey) -> String {
        SHA256.hash(data: key.rawRepresentation).prefix(8).hexEncoded
    }

    public var signingKeyID: String? { signingKey.map { Self.keyID(of: $0.publicKey) } }
}
