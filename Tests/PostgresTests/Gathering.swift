@testable import Postgres
import Testing

/// Starts `PostgresClient.gatheringLimit` single statements together on `executor` (added from a
/// task there, they all start within one tick of that thread) and checks that they ran on one
/// connection and that the one that failed failed alone: caller 5 divides by zero, the others
/// return their backend's pid.
func expectStatementsStartedTogetherShareAConnection(
    on executor: any TaskExecutor, _ client: PostgresClient, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let outcomes = await Task(executorPreference: executor) {
        await withTaskGroup(of: (Int, Result<Int32, any Error>).self) { group in
            for caller in 0..<PostgresClient.gatheringLimit {
                group.addTask {
                    do {
                        let rows = try await client.query(
                            "SELECT pg_backend_pid() + 0 / $1::int", [caller == 5 ? 0 : 1])
                        return (caller, .success(try rows[0].decode(Int32.self, at: 0)))
                    } catch {
                        return (caller, .failure(error))
                    }
                }
            }
            var outcomes: [Int: Result<Int32, any Error>] = [:]
            for await (caller, outcome) in group { outcomes[caller] = outcome }
            return outcomes
        }
    }.value
    let pids = Set(outcomes.values.compactMap { try? $0.get() })
    #expect(pids.count == 1, "the statements ran on \(pids.count) connections", sourceLocation: sourceLocation)
    #expect(
        outcomes.values.filter { (try? $0.get()) != nil }.count == PostgresClient.gatheringLimit - 1,
        sourceLocation: sourceLocation)
    guard case .failure(let error) = outcomes[5] else {
        Issue.record("the division by zero succeeded", sourceLocation: sourceLocation)
        return
    }
    #expect((error as? PostgresError)?.sqlState == "22012", sourceLocation: sourceLocation)
}
