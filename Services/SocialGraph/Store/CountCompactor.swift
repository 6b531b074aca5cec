import Logging
import Postgres
import ServiceLifecycle

/// Folds `social_graph.count_deltas` into `social_graph.counts`, oldest first, a batch per
/// transaction, so the deltas a total is summed from stay few. One instance at a time does it (a
/// transaction-scoped advisory lock); a read sums a counts row and its deltas in one statement, so it
/// sees a batch either all still as deltas or all folded in.
///
/// Each follow's +1 is inserted, with a smaller id, before its unfollow's −1 can be (the unfollow
/// needs the edge committed), so folding deltas in id order never takes a total below zero.
struct CountCompactor: Service {
    let postgres: PostgresClient
    let logger: Logger
    /// Deltas folded per transaction.
    var batchSize = 5_000
    /// Pause when a pass left fewer than a batch behind.
    var interval: Duration = .milliseconds(200)

    func run() async throws {
        while !Task.isCancelled {
            var folded = 0
            do {
                folded = try await compact()
            } catch {
                logger.warning("folding follow counts failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
            }
            if folded == batchSize { continue }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }

    /// Folds up to one batch; returns how many deltas it folded (0 when another instance is at it).
    func compact() async throws -> Int {
        let batchSize = Int64(batchSize)
        return try await postgres.transaction { connection in
            let locked = try await connection.query("SELECT pg_try_advisory_xact_lock($1)", [Self.lockKey])
            guard try locked[0].decode(Bool.self, at: 0) else { return 0 }
            return Int(try await connection.query(Self.fold, [batchSize])[0].decode(Int64.self, at: 0))
        }
    }

    static let lockKey = AdvisoryLockKey.of("aviary.social_graph.count_deltas")

    // An upsert cannot serve: CHECK constraints judge the candidate row (a negative sum) before the
    // conflict, so existing rows are updated and new ones inserted.
    private static let fold = """
        WITH moved AS (
            DELETE FROM social_graph.count_deltas
            WHERE id IN (SELECT id FROM social_graph.count_deltas ORDER BY id LIMIT $1)
            RETURNING user_id, followers, following
        ), summed AS (
            SELECT user_id, sum(followers)::bigint AS followers, sum(following)::bigint AS following
            FROM moved GROUP BY user_id
        ), updated AS (
            UPDATE social_graph.counts AS c
            SET followers = c.followers + s.followers, following = c.following + s.following
            FROM summed AS s WHERE c.user_id = s.user_id
            RETURNING c.user_id
        ), inserted AS (
            INSERT INTO social_graph.counts (user_id, followers, following)
            SELECT user_id, followers, following FROM summed WHERE user_id NOT IN (SELECT user_id FROM updated)
        )
        SELECT count(*) FROM moved
        """
}
