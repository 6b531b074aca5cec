import CArgon2
import Foundation
import Postgres
import RPC
import Testing

/// What is stored for a password, and the upgrade of hashes made with weaker parameters.
@Suite struct PasswordStorageTests {
    private func storedHash(_ postgres: PostgresClient, userID: String) async throws -> String {
        try await postgres.query("SELECT password_hash FROM auth.users WHERE id = $1", [Int64(userID)!])[0]
            .decode(String.self, at: 0)
    }

    @Test func passwordsAreStoredAsArgon2idAndWeakHashesAreUpgraded() async throws {
        let instance = try await AuthStack.shared.main()
        let account = try await instance.api.register()
        let postgres = try instance.database()
        defer { Task { await postgres.shutdown() } }

        let stored = try await storedHash(postgres, userID: account.id)
        #expect(stored.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(!stored.contains(account.password))

        // A hash from an older, cheaper configuration: still accepted, replaced at the next sign-in.
        let password = Array(account.password.utf8)
        let salt = Array("saltsaltsaltsalt".utf8)
        var encoded = [CChar](repeating: 0, count: 256)
        #expect(argon2id_hash_encoded(1, 4096, 1, password, password.count, salt, salt.count, 32, &encoded, encoded.count) == 0)
        let weak = String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try await postgres.execute("UPDATE auth.users SET password_hash = $2 WHERE id = $1", [Int64(account.id)!, weak])

        _ = try await instance.api.login(account.username, account.password)
        let upgraded = try await storedHash(postgres, userID: account.id)
        #expect(upgraded.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(upgraded != weak)
        _ = try await instance.api.login(account.username, account.password)
    }
}
