import Locking

/// Hands each value to every stream made from it: for events that several independent readers
/// follow (presence changes, revoked sessions, a Redis subscriber's connection events). A stream
/// its reader drops leaves; ``finish()`` ends every stream, and streams made after it end at once.
public final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var sinks: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var isFinished = false
    }

    private let bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy
    private let state = Locked(State())

    /// - Parameter bufferingPolicy: what each stream keeps while its reader is behind.
    public init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded) {
        self.bufferingPolicy = bufferingPolicy
    }

    /// A new stream of the values yielded from now on.
    public func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let id: Int? = state.withLock { state in
            guard !state.isFinished else { return nil }
            defer { state.nextID += 1 }
            state.sinks[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.sinks.removeValue(forKey: id) }
        }
        return stream
    }

    public func yield(_ value: Element) {
        for sink in state.withLock({ Array($0.sinks.values) }) { sink.yield(value) }
    }

    /// Ends every stream, and every stream made later.
    public func finish() {
        let sinks = state.withLock { state in
            defer {
                state.sinks = [:]
                state.isFinished = true
            }
            return Array(state.sinks.values)
        }
        for sink in sinks { sink.finish() }
    }
}
