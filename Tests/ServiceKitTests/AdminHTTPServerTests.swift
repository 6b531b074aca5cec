import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceKit
import ServiceLifecycle
import Testing

@Suite("AdminHTTPServer", .timeLimit(.minutes(1)))
struct AdminHTTPServerTests {
    static let logger = Logger(label: "admin-test") { _ in SwiftLogNoOpLogHandler() }

    /// Runs a server on a free port in a `ServiceGroup` for the duration of `body`.
    func withServer(
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        readiness: @escaping AdminHTTPServer.ReadinessCheck = { ["postgres": true] },
        routes: [AdminHTTPServer.Routes] = [],
        _ body: @Sendable (_ port: Int, _ group: ServiceGroup) async throws -> Void
    ) async throws {
        let server = AdminHTTPServer(
            host: "127.0.0.1", port: 0, registry: registry, readiness: readiness, routes: routes,
            logger: Self.logger)
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.boundPort
            try await body(port, group)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test func healthzAnswersOkAndKeepsTheConnection() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                for _ in 0..<3 {
                    try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    let response = try await connection.readResponse()
                    #expect(response.status == 200)
                    #expect(response.body == "ok")
                    #expect(response.header("content-length") == "2")
                    #expect(response.header("connection") == nil)
                }
            }
        }
    }

    @Test func headGetsHeadersWithoutBody() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                let head = try await connection.readResponse(bodyless: true)
                #expect(head.status == 200)
                #expect(head.header("content-length") == "2")
                // The next response starts right after the head: no body bytes were sent.
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().body == "ok")
            }
        }
    }

    @Test func readyzReportsChecks() async throws {
        try await withServer(readiness: { ["postgres": true, "redis": true] }) { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(response.header("content-type") == "application/json")
                #expect(response.body == #"{"checks":{"postgres":true,"redis":true},"ready":true}"#)
            }
        }
        try await withServer(readiness: { ["postgres": true, "redis": false] }) { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 503)
                #expect(response.body == #"{"checks":{"postgres":true,"redis":false},"ready":false}"#)
            }
        }
    }

    @Test func metricsShowsSwiftMetricsInPrometheusText() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = MetricsBootstrap.makeFactory(registry: registry)
        Counter(label: "admin.test.requests", dimensions: [("rpc.method", "auth.login")], factory: factory)
            .increment(by: 3)
        Metrics.Timer(label: "admin.test.duration", factory: factory).recordMilliseconds(2)
        try await withServer(registry: registry) { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(response.header("content-type") == "text/plain; version=0.0.4")
                #expect(response.body.contains(#"admin_test_requests{rpc_method="auth.login"} 3"#))
                #expect(response.body.contains("# TYPE admin_test_duration histogram"))
                #expect(response.body.contains(#"admin_test_duration_bucket{le="0.0025"} 1"#))
            }
        }
    }

    @Test func unknownPathsAndMethods() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().status == 404)
                try await connection.send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
                let post = try await connection.readResponse()
                #expect(post.status == 405)
                #expect(post.header("allow") == "GET, HEAD")
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().status == 200)
            }
        }
    }

    @Test func bodiesOfGetRequestsAreIgnored() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send(
                    "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                #expect(try await connection.readResponse().body == "ok")
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
                #expect(try await connection.readResponse().body == "ok")
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send(
                    "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                        + "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().status == 200)
                #expect(try await connection.readResponse().status == 404)
                #expect(try await connection.readResponse().body.contains("\"ready\":true"))
            }
        }
    }

    @Test func closesWhenTheClientAsksForIt() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /healthz HTTP/1.0\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.body == "ok")
                #expect(response.header("connection") == "close")
                #expect(try await connection.isClosedByServer())
            }
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
                #expect(try await connection.readResponse().header("connection") == "close")
                #expect(try await connection.isClosedByServer())
            }
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(try await connection.readResponse().header("connection") == "keep-alive")
                try await connection.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(try await connection.readResponse().body == "ok")
            }
        }
    }

    @Test func refusesHeadersOver64KiB() async throws {
        try await withServer { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                let big = String(repeating: "a", count: 65 * 1024)
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(response.status == 400)
                #expect(try await connection.isClosedByServer())
            }
            // Just under the limit is fine.
            try await RawHTTPConnection.with(port: port) { connection in
                let large = String(repeating: "a", count: 60 * 1024)
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Large: \(large)\r\n\r\n")
                #expect(try await connection.readResponse().status == 200)
            }
        }
    }

    @Test func serviceRoutesAreHummingbirdRoutes() async throws {
        let routes: AdminHTTPServer.Routes = { router in
            router.get("/media/{id}") { request, context in
                EditedResponse(
                    headers: [.eTag: "\"v1\""],
                    response: "media \(context.parameters.get("id") ?? "-") query=\(request.uri.query ?? "-")")
            }
            router.put("/media/private/{id}") { request, _ in
                EditedResponse(status: .accepted, response: "private \(request.method.rawValue)")
            }
            router.get("/broken") { _, _ -> String in
                struct Broken: Error {}
                throw Broken()
            }
        }
        try await withServer(routes: [routes]) { port, _ in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /media/42?size=small HTTP/1.1\r\nHost: x\r\n\r\n")
                let media = try await connection.readResponse()
                #expect(media.status == 200)
                #expect(media.body == "media 42 query=size=small")
                #expect(media.header("etag") == "\"v1\"")

                try await connection.send("HEAD /media/42 HTTP/1.1\r\nHost: x\r\n\r\n")
                let head = try await connection.readResponse(bodyless: true)
                #expect(head.status == 200)
                #expect(head.header("content-length") == "\(Array("media 42 query=-".utf8).count)")

                try await connection.send("PUT /media/private/7 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                let put = try await connection.readResponse()
                #expect(put.status == 202 && put.body == "private PUT")

                try await connection.send("DELETE /media/1 HTTP/1.1\r\nHost: x\r\n\r\n")
                let delete = try await connection.readResponse()
                #expect(delete.status == 405)
                #expect(delete.header("allow") == "GET, HEAD")
                try await connection.send("GET /media/private/7 HTTP/1.1\r\nHost: x\r\n\r\n")
                let get = try await connection.readResponse()
                #expect(get.status == 405)
                #expect(get.header("allow") == "PUT")

                try await connection.send("GET /media/1/2 HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().status == 404)
                try await connection.send("GET /broken HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().status == 500)
            }
        }
    }

    @Test func gracefulShutdownClosesIdleConnectionsAndFinishesBusyOnes() async throws {
        let release = AsyncStream<Void>.makeStream()
        let entered = AsyncStream<Void>.makeStream()
        let readiness: AdminHTTPServer.ReadinessCheck = {
            entered.continuation.yield()
            for await _ in release.stream { break }
            return ["slow": true]
        }
        let server = AdminHTTPServer(
            host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), readiness: readiness,
            logger: Self.logger)
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.boundPort
            try await RawHTTPConnection.with(port: port) { idle in
                try await idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await idle.readResponse().status == 200)

                try await RawHTTPConnection.with(port: port) { busy in
                    try await busy.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                    var iterator = entered.stream.makeAsyncIterator()
                    await iterator.next()

                    await group.triggerGracefulShutdown()
                    #expect(try await idle.isClosedByServer())

                    release.continuation.yield()
                    let response = try await busy.readResponse()
                    #expect(response.status == 200)
                    #expect(response.header("connection") == "close")
                    #expect(try await busy.isClosedByServer())
                }
            }
            try await tasks.waitForAll()
        }
        await #expect(throws: AdminHTTPServerError.self) { try await server.boundPort }
    }

    /// A request whose body never ends (or trickles in) does not hold up the shutdown: it is
    /// answered at once and closed when the shutdown begins. A response the client does not read
    /// does not either: it is closed two seconds after the shutdown began.
    @Test func aRequestThatNeverEndsDoesNotHoldUpShutdown() async throws {
        let endless: AdminHTTPServer.Routes = { router in
            router.get("/endless") { _, _ in
                Response(
                    status: .ok,
                    body: ResponseBody { writer in
                        while true { try await writer.write(ByteBuffer(repeating: UInt8(ascii: "a"), count: 64 * 1024)) }
                    })
            }
        }
        let server = AdminHTTPServer(
            host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), readiness: { [:] }, routes: [endless],
            logger: Self.logger)
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            let port = try await server.boundPort
            try await RawHTTPConnection.with(port: port) { stuck in
                try await RawHTTPConnection.with(port: port) { unread in
                    try await stuck.send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nx")
                    #expect(try await stuck.readResponse().status == 405)
                    try await unread.send("GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
                    try await Task.sleep(for: .milliseconds(100))
                    let began = ContinuousClock.now
                    await group.triggerGracefulShutdown()
                    try await tasks.waitForAll()
                    #expect(ContinuousClock.now - began < .seconds(10))
                    #expect(try await stuck.isClosedByServer())
                }
            }
        }
    }

    @Test func bindFailureReachesRunAndBoundPort() async throws {
        try await withServer { port, _ in
            let second = AdminHTTPServer(
                host: "127.0.0.1", port: port, registry: PrometheusCollectorRegistry(), logger: Self.logger)
            let waiting = Task { try await second.boundPort }
            await #expect(throws: (any Error).self) { try await second.run() }
            await #expect(throws: (any Error).self) { try await waiting.value }
        }
    }

    @Test func cancellationStopsTheServer() async throws {
        let server = AdminHTTPServer(
            host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), logger: Self.logger)
        let task = Task { try await server.run() }
        let port = try await server.boundPort
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await connection.readResponse().status == 200)
            task.cancel()
            _ = try? await task.value
            #expect(try await connection.isClosedByServer())
        }
    }
}
