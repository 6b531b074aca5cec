@testable import Postgres
import Testing

@Suite("Statements that only read")
struct StatementUseTests {
    @Test(arguments: [
        "SELECT 1",
        "  select id FROM t WHERE id = $1",
        "SELECT deleted, updated_at, inserted FROM t",
        "WITH recent AS (SELECT id FROM t ORDER BY id DESC LIMIT 10) SELECT * FROM recent",
        "SELECT id FROM t\nFOR\tNOTHING",
        "SELECT updates, keys FROM shares",
    ])
    func reads(sql: String) {
        #expect(PostgresClient.onlyReads(sql))
    }

    @Test(arguments: [
        "INSERT INTO t VALUES (1)",
        "update t SET n = 1",
        "DELETE FROM t",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
        "WITH moved AS (DELETE FROM t RETURNING id) SELECT count(*) FROM moved",
        "SELECT id FROM t FOR UPDATE",
        "SELECT id FROM t FOR NO KEY UPDATE",
        "select id from t for share",
        "SELECT id FROM t FOR KEY SHARE",
        "CREATE TABLE t (id bigint)",
        "VACUUM t",
        "",
        "   ",
    ])
    func writes(sql: String) {
        #expect(!PostgresClient.onlyReads(sql))
    }
}
