import Metrics
import Prometheus
import ServiceKit
import Testing

/// `MetricsBootstrap.bootstrap()` sets the process-wide factory, which a test process may do only
/// once, so these tests use the same factory through `makeFactory(registry:)`.
@Suite("MetricsBootstrap")
struct MetricsBootstrapTests {
    func render(_ registry: PrometheusCollectorRegistry) -> String {
        String(decoding: MetricsBootstrap.render(registry), as: UTF8.self)
    }

    @Test func swiftMetricsAppearInTheRegistry() {
        let registry = PrometheusCollectorRegistry()
        let factory = MetricsBootstrap.makeFactory(registry: registry)
        let calls = Counter(label: "rpc.server.calls", dimensions: [("rpc.method", "tweets.create")], factory: factory)
        calls.increment()
        calls.increment()
        Recorder(label: "db.pool.in_use", aggregate: false, factory: factory).record(3)
        Recorder(label: "media.upload.bytes", factory: factory).record(700)
        let text = self.render(registry)
        #expect(text.contains("# TYPE rpc_server_calls counter"))
        #expect(text.contains(#"rpc_server_calls{rpc_method="tweets.create"} 2"#))
        #expect(text.contains("# TYPE db_pool_in_use gauge"))
        #expect(text.contains("db_pool_in_use 3.0"))
        #expect(text.contains("# TYPE media_upload_bytes histogram"))
    }

    @Test func timersAreHistogramsFromATenthOfAMillisecondToFiveSeconds() {
        let registry = PrometheusCollectorRegistry()
        let factory = MetricsBootstrap.makeFactory(registry: registry)
        let timer = Metrics.Timer(label: "rpc.server.duration", dimensions: [("rpc.method", "a")], factory: factory)
        timer.recordNanoseconds(50_000)  // 0.05 ms
        timer.recordMilliseconds(30)
        timer.recordSeconds(7)
        let text = self.render(registry)
        #expect(text.contains("# TYPE rpc_server_duration histogram"))
        #expect(text.contains(#"rpc_server_duration_bucket{rpc_method="a",le="0.0001"} 1"#))
        #expect(text.contains(#"rpc_server_duration_bucket{rpc_method="a",le="0.05"} 2"#))
        #expect(text.contains(#"rpc_server_duration_bucket{rpc_method="a",le="5.0"} 2"#))
        #expect(text.contains(#"rpc_server_duration_bucket{rpc_method="a",le="+Inf"} 3"#))
        #expect(text.contains(#"rpc_server_duration_count{rpc_method="a"} 3"#))
        #expect(MetricsBootstrap.latencyBuckets.first == .microseconds(100))
        #expect(MetricsBootstrap.latencyBuckets.last == .seconds(5))
    }
}
