import AuthTokens
import Logging
import ServiceLifecycle

/// Keeps the process's copy of the revoked sessions current (``SessionRevocations/watch(logger:)``),
/// so that verifying a token costs no round trip. It stops as soon as a graceful shutdown begins;
/// the calls still draining then check each session in Redis.
struct RevocationWatch: Service {
    let revocations: SessionRevocations
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown { await revocations.watch(logger: logger) }
    }
}
