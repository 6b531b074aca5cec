import ChannelSupport
import Crypto
import Foundation
import Logging
import Postgres

/// Secrets that a single-machine install does not configure are generated once, by whichever
/// service starts first, and read by all of them from one table: the same value everywhere,
/// stable across restarts (table `aviary_shared.secrets`, ``SharedSchema``). A production deployment
/// sets them explicitly instead.
enum SharedSecrets {
    /// The secret called `name`, created with `bytes` random bytes (hex) if no service made it yet.
    static func value(named name: String, bytes: Int = 32, postgres: PostgresClient, logger: Logger) async throws -> String {
        let candidate = SymmetricKey(size: .init(bitCount: bytes * 8)).withUnsafeBytes { Data($0) }.hexEncoded
        let inserted = try await postgres.execute(
            "INSERT INTO aviary_shared.secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", [name, candidate])
        if inserted == 1 {
            logger.warning(
                "generated the shared secret '\(name)' and stored it in the database; set it explicitly in production")
        }
        let rows = try await postgres.query("SELECT value FROM aviary_shared.secrets WHERE name = $1", [name])
        return try rows[0].decode(String.self, at: 0)
    }
}
