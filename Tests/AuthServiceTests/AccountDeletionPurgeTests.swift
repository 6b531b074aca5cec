import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Testing
import TestSupport

/// What auth keeps of a deleted account, and for how long.
@Suite("Deleted accounts")
struct AccountDeletionPurgeTests {
    @Test("a deleted account's row is emptied at once, keeps its username 30 days, then is purged")
    func purge() async throws {
        let instance = try await AuthStack.shared.main()
        let api = instance.api
        let account = try await api.register()
        _ = try await api.call("auth.deleteAccount", ["password": .string(account.password)], token: account.token)
        let database = try instance.database()
        let row = try #require(
            try await database.query(
                "SELECT email, fullname, password_hash IS NULL, deleted_at IS NOT NULL FROM auth.users WHERE id = $1",
                [Int64(account.id)!]
            ).first)
        #expect(try row.decode(String.self, at: 0) == "deleted-\(account.id)@invalid")
        #expect(try row.decode(String.self, at: 1) == "")
        #expect(try row.decode(Bool.self, at: 2) && row.decode(Bool.self, at: 3))
        // Taken for 30 days: registering the username is refused.
        let taken = await rpcError { _ = try await api.register(["username": .string(account.username)]) }
        #expect(taken?.field == "username")
        // 30 days on, the sweep (every second here) deletes the row and frees the name.
        try await database.execute(
            "UPDATE auth.users SET deleted_at = now() - interval '31 days' WHERE id = $1", [Int64(account.id)!])
        #expect(await eventually {
            (try? await api.register(["username": .string(account.username), "email": .string("\(Unique.username())@example.com")])) != nil
        })
        await database.shutdown()
    }
}
