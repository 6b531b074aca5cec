/// A failure of the test harness itself: a server that would not start, a missing binary, a command
/// that failed. The message says what happened and, where there is one, ends with the log tail.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in words a test author can act on.
    public let message: String

    /// Creates an error with the given message.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
