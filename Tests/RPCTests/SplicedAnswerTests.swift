import AviaryJSON
import Logging
import RPC
import Testing

@Suite("Another service's answer, spliced")
struct SplicedAnswerTests {
    /// A peer's answer that is not an array is the peer misbehaving: `unavailable`, naming the method.
    @Test func anAnswerThatIsNotAnArrayIsUnavailable() throws {
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        #expect(try JSONSplice.elements(ofAnswer: Array("[1,2]".utf8), to: "peer.getMany", logger: logger) == [1..<2, 3..<4])
        let error = try #require(throws: RPCError.self) {
            try JSONSplice.elements(ofAnswer: Array(#"{"a":1}"#.utf8), to: "peer.getMany", logger: logger)
        }
        #expect(error.reason == "unavailable" && error.message.contains("peer.getMany"))
    }
}
