import AuthTokens
import Logging
import ServiceLifecycle

/// Deletes the Web Push subscriptions of sessions as they end (logout, a password change, a
/// revoked token): a push must not outlive the sign-in that asked for it. The revoked sessions
/// come from ``SessionRevocations/endedSessions()``, which names them all again after a reload,
/// so a subscription whose session ended while this process was away goes when it starts.
struct PushSessionWatch: Service {
    let revocations: SessionRevocations
    let store: PushStore
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await sessions in revocations.endedSessions() {
                do {
                    try await store.delete(sessions: sessions)
                } catch {
                    logger.warning("could not delete the push subscriptions of ended sessions", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
