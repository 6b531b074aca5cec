import Foundation
import Locking
import Logging
import ServiceKit
import Testing

@Suite("Log handlers")
struct LogHandlerTests {
    /// Collects the lines a handler writes.
    final class Capture: Sendable {
        private let lines = Locked<[String]>([])

        var output: LogOutput {
            LogOutput { bytes in self.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        }

        var all: [String] { self.lines.withLock { $0 } }
    }

    static let timestamp = #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"#

    func logger(_ format: LogFormat, _ capture: Capture, level: Logger.Level = .info) -> Logger {
        Logger(label: "test") { _ in
            LoggingBootstrap.makeHandler(format: format, level: level, service: "auth", output: capture.output)
        }
    }

    func jsonObject(_ line: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func textLine() throws {
        let capture = Capture()
        var logger = self.logger(.text, capture)
        logger[metadataKey: "rpc.method"] = "auth.login"
        logger.info("user logged in", metadata: ["user.id": "42", "note": "two words", "db": ["pool": "8"]])
        let line = try #require(capture.all.first)
        let pattern = try Regex(
            "^\(Self.timestamp) info auth: user logged in db.pool=8 note=\"two words\" rpc.method=auth.login user.id=42\n$")
        #expect(line.wholeMatch(of: pattern) != nil, "got \(line)")
    }

    @Test func textLineStaysOneLine() throws {
        let capture = Capture()
        let logger = self.logger(.text, capture)
        struct Failure: Error, CustomStringConvertible { var description: String { "bad\nthing" } }
        logger.error(
            "first\nsecond", error: Failure(),
            metadata: ["quote": "say \"hi\"", "empty": "", "eq": "a=b", "list": ["x", "y z"]])
        let line = try #require(capture.all.first)
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(line.hasSuffix(#" error auth: first\nsecond empty="" eq="a=b" list="[x, y z]" quote="say \"hi\"" error="bad\nthing""# + "\n"))
    }

    @Test func jsonLine() throws {
        let capture = Capture()
        var logger = self.logger(.json, capture)
        logger[metadataKey: "trace_id"] = "4bf92f3577b34da6a3ce929d0e0e4736"
        logger.warning(
            "slow query", metadata: ["db.statement.name": "timeline.home", "rows": "\(12)", "tags": ["a", "b"],
                "nested": ["k": "v"]])
        let line = try #require(capture.all.first)
        #expect(line.hasSuffix("}\n"))
        #expect(line.hasPrefix(#"{"ts":""#))
        #expect(
            line.contains(
                #"","level":"warning","service":"auth","msg":"slow query","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","db.statement.name":"timeline.home","nested":{"k":"v"},"rows":"12","tags":["a","b"]}"#
            ), "got \(line)")
        let object = try self.jsonObject(line)
        let ts = try #require(object["ts"] as? String)
        #expect(ts.wholeMatch(of: try Regex(Self.timestamp)) != nil)
        #expect(object["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
    }

    @Test func jsonEscapesQuotesNewlinesControlsAndKeepsUnicode() throws {
        let capture = Capture()
        let logger = self.logger(.json, capture)
        let tricky = "say \"hi\"\\ \n\r\t\u{01}\u{7F} café 🐦 日本 \u{2028}"
        logger.info("\(tricky)", metadata: ["value": "\(tricky)", "ke\"y": "x"])
        let line = try #require(capture.all.first)
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(line.contains(#""msg":"say \"hi\"\\ \n\r\t\u0001\u007f café 🐦 日本 "#))
        let object = try self.jsonObject(line)
        #expect(object["msg"] as? String == tricky)
        #expect(object["value"] as? String == tricky)
        #expect(object["ke\"y"] as? String == "x")
    }

    @Test func jsonKeepsReservedFieldsUnique() throws {
        let capture = Capture()
        let logger = self.logger(.json, capture)
        struct Failure: Error {}
        logger.error("boom", error: Failure(), metadata: ["msg": "shadow", "level": "x", "error": "explicit"])
        let line = try #require(capture.all.first)
        let object = try self.jsonObject(line)
        #expect(object["msg"] as? String == "boom")
        #expect(object["metadata.msg"] as? String == "shadow")
        #expect(object["level"] as? String == "error")
        #expect(object["metadata.level"] as? String == "x")
        #expect(object["error"] as? String == "Failure()")
        #expect(object["metadata.error"] as? String == "explicit")
    }

    @Test func metadataPrecedenceAndProvider() throws {
        let capture = Capture()
        let provider = Logger.MetadataProvider { ["request.id": "from-provider", "source": "provider"] }
        var logger = Logger(label: "test") { _ in
            LineLogHandler(format: .json, service: "tweets", level: .debug, metadataProvider: provider, output: capture.output)
        }
        logger[metadataKey: "source"] = "handler"
        logger[metadataKey: "handler.only"] = "yes"
        logger.debug("one")
        logger.debug("two", metadata: ["source": "call"])
        let lines = try capture.all.map(self.jsonObject)
        #expect(lines.count == 2)
        #expect(lines[0]["source"] as? String == "provider")
        #expect(lines[0]["request.id"] as? String == "from-provider")
        #expect(lines[0]["handler.only"] as? String == "yes")
        #expect(lines[0]["service"] as? String == "tweets")
        #expect(lines[1]["source"] as? String == "call")
    }

    @Test func levelFilters() {
        let capture = Capture()
        let logger = self.logger(.text, capture, level: .notice)
        logger.info("hidden")
        logger.notice("shown")
        logger.critical("shown too")
        #expect(capture.all.count == 2)
        #expect(capture.all[0].contains(" notice auth: shown"))
        #expect(capture.all[1].contains(" critical auth: shown too"))
    }
}
