import NIOCore
import NIOPosix

/// Runs the jobs of tasks that prefer it on one NIO event loop.
///
/// A call's task prefers the event loop of the connection it came on, so its work, its socket
/// writes and the calls it makes share that thread instead of hopping to Swift's global pool and
/// back at every `await`. Nothing may block such a task: Argon2 and file I/O run on thread pools of
/// their own, and the Postgres and Redis clients are non-blocking.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

extension EventLoopTaskExecutor {
    /// The executor of the event loop the caller runs on; nil off the loops. A task started from a
    /// call (`Task(executorPreference: .current)`) then stays on the call's loop: an unstructured
    /// task does not inherit the preference.
    public static var current: EventLoopTaskExecutor? {
        MultiThreadedEventLoopGroup.currentEventLoop.map(EventLoopTaskExecutor.init)
    }
}
