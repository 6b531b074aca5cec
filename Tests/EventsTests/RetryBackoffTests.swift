import EventStreams
import Testing

@Suite("RetryBackoff")
struct RetryBackoffTests {
    @Test("pauses double from the initial one up to the maximum, and start over after a reset")
    func pausesDoubleUpToTheMaximum() {
        var backoff = RetryBackoff(initial: .milliseconds(100), maximum: .seconds(1))
        let pauses = (0..<6).map { _ in backoff.next() }
        #expect(pauses == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        for _ in 0..<100 { _ = backoff.next() }
        #expect(backoff.next() == .seconds(1), "many failures neither overflow nor pass the maximum")
        backoff.reset()
        #expect(backoff.failures == 0)
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test("the first failure and every 20th are logged, the others not")
    func loggingIsThinnedOut() {
        var backoff = RetryBackoff(initial: .milliseconds(1), maximum: .milliseconds(1))
        var logged: [Int] = []
        for failure in 1...60 {
            _ = backoff.next()
            if backoff.isWorthLogging { logged.append(failure) }
        }
        #expect(logged == [1, 20, 40, 60])
        backoff.reset()
        #expect(!backoff.isWorthLogging, "no failure since the reset")
    }
}
