import AuthTokens
import ChannelSupport
import Crypto
import Foundation
import Logging
import Postgres

/// Where access-token keys come from: `AVIARY_TOKEN_SIGNING_KEY` (base64 of an Ed25519 seed, for
/// auth) and `AVIARY_TOKEN_PUBLIC_KEYS` (comma-separated base64 public keys, for every service, to
/// accept tokens of a previous key during a rotation). With neither set, a seed is generated once
/// and shared through the database, so a single-machine install works with no configuration.
enum TokenKeyLoading {
    static let signingKeyVariable = "AVIARY_TOKEN_SIGNING_KEY"
    static let publicKeysVariable = "AVIARY_TOKEN_PUBLIC_KEYS"
    static let lifetimeVariable = "AVIARY_TOKEN_LIFETIME_SECONDS"
    static let staleRevocationsVariable = "AVIARY_REVOCATION_STALE_MS"

    static func load(configuration: ServiceConfiguration, postgres: PostgresClient, logger: Logger) async throws -> TokenKeys {
        let publicKeys = try (configuration.value(publicKeysVariable) ?? "").split(separator: ",").map { text in
            guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)),
                let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
            else { throw ConfigurationError(variable: publicKeysVariable, message: "\(publicKeysVariable) must list base64 Ed25519 public keys") }
            return key
        }
        if let text = configuration.value(signingKeyVariable) {
            guard let seed = Data(base64Encoded: text), seed.count == 32 else {
                throw ConfigurationError(
                    variable: signingKeyVariable, message: "\(signingKeyVariable) must be the base64 of a 32-byte Ed25519 seed")
            }
            return try TokenKeys(signingSeed: Array(seed), extraPublicKeys: publicKeys)
        }
        if !publicKeys.isEmpty { return try TokenKeys(signingSeed: nil, extraPublicKeys: publicKeys) }
        let hex = try await SharedSecrets.value(named: "token_signing_seed", postgres: postgres, logger: logger)
        return try TokenKeys(signingSeed: hexBytes(hex))
    }

    static func lifetime(configuration: ServiceConfiguration) throws -> Duration {
        .seconds(try configuration.integer(lifetimeVariable, default: 900, in: 30...86_400))
    }

    /// How long the copy of revoked sessions answers token checks while Redis cannot
    /// (``SessionRevocations/staleWindow``): 0 fails them at once, at most an hour.
    static func revocationStaleWindow(configuration: ServiceConfiguration) throws -> Duration {
        .milliseconds(
            try configuration.integer(
                staleRevocationsVariable, default: Int(SessionRevocations.defaultStaleWindow.milliseconds), in: 0...3_600_000))
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index < hex.endIndex {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }
}
