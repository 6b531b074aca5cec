import EventStreams
import ServiceLifecycle

/// A background service that runs `work` at start and then every `interval`, until the service
/// group shuts down gracefully (a run in progress finishes first; the pause between runs is cut
/// short) or the task is cancelled. `work` handles and logs its own failures: the next run is the
/// retry.
public struct PeriodicJob: Service {
    public let interval: Duration
    private let work: @Sendable () async -> Void

    public init(every interval: Duration, _ work: @escaping @Sendable () async -> Void) {
        self.interval = interval
        self.work = work
    }

    public func run() async throws {
        while !serviceIsStopping {
            await work()
            await pauseUnlessStopping(for: interval)
        }
    }
}
