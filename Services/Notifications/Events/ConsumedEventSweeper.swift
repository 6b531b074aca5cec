import Logging

/// Forgets applied events after a week (run hourly, as a ``PeriodicJob``): by then their stream
/// entries were acknowledged or trimmed long ago, so none can be delivered again.
struct ConsumedEventSweeper: Sendable {
    static let interval: Duration = .seconds(3_600)
    let store: NotificationStore
    let logger: Logger
    var retention: Duration = .seconds(7 * 86_400)

    func sweep() async {
        do {
            let forgotten = try await store.forgetConsumedEvents(olderThan: retention)
            if forgotten > 0 { logger.debug("forgot applied events", metadata: ["count": "\(forgotten)"]) }
        } catch {
            logger.warning("could not forget applied events", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
