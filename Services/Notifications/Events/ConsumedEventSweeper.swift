import Logging
import ServiceLifecycle

/// Forgets applied events after a week, hourly: by then their stream entries were acknowledged or
/// trimmed long ago, so none can be delivered again.
struct ConsumedEventSweeper: Service {
    let store: NotificationStore
    let logger: Logger
    var retention: Duration = .seconds(7 * 86_400)
    var interval: Duration = .seconds(3_600)

    func run() async throws {
        while !Task.isCancelled {
            do {
                let forgotten = try await store.forgetConsumedEvents(olderThan: retention)
                if forgotten > 0 { logger.debug("forgot applied events", metadata: ["count": "\(forgotten)"]) }
            } catch {
                logger.warning("could not forget applied events", metadata: ["error": "\(String(reflecting: error))"])
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
