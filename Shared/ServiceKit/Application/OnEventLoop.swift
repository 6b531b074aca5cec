import NIOPosix
import RPC
import ServiceLifecycle

/// Runs a background service's task on one NIO event loop, as calls run (``EventLoopTaskExecutor``):
/// its awaits on Redis, Postgres and other services resume there instead of hopping through Swift's
/// global pool. Only for services that never block their thread.
struct OnEventLoop: Service {
    let service: any Service
    let executor = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())

    init(_ service: any Service) {
        self.service = service
    }

    func run() async throws {
        try await withTaskExecutorPreference(executor) { try await service.run() }
    }
}
