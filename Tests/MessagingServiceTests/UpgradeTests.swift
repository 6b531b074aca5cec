import Logging
import MessagingService
import Postgres
import ServiceKit
import TestSupport
import Testing

/// A database made by the previous release's migrations, with data in it, brought up to date by
/// this release's: what the new migrations backfill is checked on real rows.
@Suite struct UpgradeTests {
    /// The previous release knew migrations 1-3; 4 adds `members.took_part` and backfills it: a
    /// member took part who made the conversation or sent in it.
    @Test func tookPartIsBackfilledForExistingMembers() async throws {
        let server = try await TestServers.postgres()
        let database = try PostgresClient(
            configuration: PostgresConfiguration(url: try await server.makeDatabase()), logger: Logger(label: "upgrade-test"))
        let definition = MessagingService.definition
        let previous = definition.migrations.filter { $0.version <= 3 }
        #expect(try await PostgresMigrator(schema: definition.schema, migrations: previous).migrate(database) == [1, 2, 3])
        for statement in [
            """
            INSERT INTO messaging.conversations (id, kind, title, direct_low, direct_high, created_by, activity_id, last_seq)
            VALUES (1, 'direct', NULL, 10, 20, 10, 1, 1), (2, 'group', 'trip', NULL, NULL, 30, 2, 1), (3, 'direct', NULL, 60, 70, 60, 3, 0)
            """,
            "INSERT INTO messaging.members (conversation_id, user_id) VALUES (1, 10), (1, 20), (2, 30), (2, 40), (2, 50), (3, 60), (3, 70)",
            """
            INSERT INTO messaging.messages (id, conversation_id, seq, sender_id, text, kind)
            VALUES (100, 1, 1, 20, 'hi', 'text'), (200, 2, 1, 40, 'who is in', 'text')
            """,
        ] {
            try await database.execute(statement)
        }

        let applied = try await PostgresMigrator(schema: definition.schema, migrations: definition.migrations).migrate(database)
        #expect(applied == definition.migrations.map(\.version).filter { $0 > 3 })
        let rows = try await database.query(
            "SELECT conversation_id, user_id, took_part FROM messaging.members ORDER BY conversation_id, user_id")
        let tookPart = try rows.map { [try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1), try $0.decode(Bool.self, at: 2) ? 1 : 0] }
        #expect(
            tookPart == [
                [1, 10, 1],  // made the direct conversation
                [1, 20, 1],  // sent in it
                [2, 30, 1],  // made the group
                [2, 40, 1],  // sent in it
                [2, 50, 0],  // only put in it
                [3, 60, 1],  // made it, no message yet
                [3, 70, 0],  // a stranger's openDirect: nothing shown of them
            ])
        // Migration 7 gives each group its owner: the creator, who is still a member; direct
        // conversations have none.
        let owners = try await database.query(
            "SELECT conversation_id, user_id FROM messaging.members WHERE role = 'owner' ORDER BY conversation_id")
        #expect(try owners.map { [try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1)] } == [[2, 30]])
        // Nothing else changed: the messages are all there.
        let messages = try await database.query("SELECT count(*) FROM messaging.messages")
        #expect(try messages[0].decode(Int64.self, at: 0) == 2)
        await database.shutdown()
    }
}
