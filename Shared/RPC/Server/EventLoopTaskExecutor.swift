import NIOCore

/// Runs the jobs of tasks that prefer it on one NIO event loop.
///
/// A call's task prefers the event loop of the connection it came on, so its work, its socket
/// writes and the calls it makes share that thread instead of hopping to Swift's global pool and
/// back at every `await`. Nothing may block such a task: libpq, Argon2 and file I/O run on thread
/// pools of their own, and Redis is non-blocking.
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
