import ArgumentParser
import Foundation
import Logging
import Postgres

/// The secrets a benchmark needs to act as a service or as any user: each from the value given (a
/// flag, else the environment), or else from `aviary_shared.secrets`, where services without
/// configured secrets generate and share them (hex). The database is read only for a secret that
/// is needed and not given.
enum BenchSecrets {
    /// The service credential (`--service-credential`, `AVIARY_SERVICE_SECRET`).
    static func credential(_ given: String?, postgresURL: String) async throws -> String {
        if let given { return given }
        guard let stored = try await stored("service_credential", postgresURL: postgresURL) else {
            throw ValidationError("no service credential: give --service-credential or set AVIARY_SERVICE_SECRET")
        }
        return stored
    }

    /// The token signing seed (`--signing-key`, `AVIARY_TOKEN_SIGNING_KEY`: base64 of 32 bytes).
    static func signingSeed(_ given: String?, postgresURL: String) async throws -> [UInt8] {
        if let given {
            guard let data = Data(base64Encoded: given), data.count == 32 else {
                throw ValidationError("the signing key must be the base64 of a 32-byte Ed25519 seed")
            }
            return Array(data)
        }
        guard let stored = try await stored("token_signing_seed", postgresURL: postgresURL).map(hexBytes), stored.count == 32 else {
            throw ValidationError("no signing key: give --signing-key or set AVIARY_TOKEN_SIGNING_KEY")
        }
        return stored
    }

    private static func stored(_ name: String, postgresURL: String) async throws -> String? {
        let postgres = try PostgresClient(configuration: .init(url: postgresURL), logger: Logger(label: "bench"))
        defer { Task { await postgres.shutdown() } }
        let rows = try await postgres.query("SELECT value FROM aviary_shared.secrets WHERE name = $1", [name])
        return try rows.first?.decode(String.self, at: 0)
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) }
    }
}
