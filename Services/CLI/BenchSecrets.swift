import ArgumentParser
import Foundation
import Logging
import Postgres

/// The secrets a benchmark needs to act as a service or as any user: the service credential and
/// the token signing seed.
struct BenchSecrets {
    var credential: String
    var signingSeed: [UInt8]

    /// From the given values, else from `aviary_shared.secrets`, where services without configured
    /// secrets generate and share them (hex).
    static func resolve(credential: String?, signingKey: String?, postgresURL: String) async throws -> BenchSecrets {
        var seed = try signingKey.map { text -> [UInt8] in
            guard let data = Data(base64Encoded: text), data.count == 32 else {
                throw ValidationError("the signing key must be the base64 of a 32-byte Ed25519 seed")
            }
            return Array(data)
        }
        var credential = credential
        if credential == nil || seed == nil {
            let postgres = try PostgresClient(configuration: .init(url: postgresURL), logger: Logger(label: "bench"))
            defer { Task { await postgres.shutdown() } }
            let rows = try await postgres.query(
                "SELECT name, value FROM aviary_shared.secrets WHERE name IN ('service_credential', 'token_signing_seed')")
            for row in rows {
                let value = try row.decode(String.self, at: 1)
                switch try row.decode(String.self, at: 0) {
                case "service_credential": credential = credential ?? value
                default: seed = seed ?? hexBytes(value)
                }
            }
        }
        guard let credential, let seed, seed.count == 32 else {
            throw ValidationError("no service credential or signing key: set AVIARY_SERVICE_SECRET and AVIARY_TOKEN_SIGNING_KEY")
        }
        return BenchSecrets(credential: credential, signingSeed: seed)
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) }
    }
}
