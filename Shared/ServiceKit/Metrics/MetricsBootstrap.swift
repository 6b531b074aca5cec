import Metrics
import Prometheus

/// Installs swift-prometheus as the process-wide swift-metrics backend, so every `Counter`,
/// `Timer`, `Recorder` and `Meter` made anywhere in the process shows up on `GET /metrics`.
///
/// Metric labels and dimension names are made Prometheus-safe by the registry: dots become
/// underscores (`rpc.server.duration` is exported as `rpc_server_duration`).
public enum MetricsBootstrap {
    /// The content type of ``render(_:)``'s output.
    public static let contentType = "text/plain; version=0.0.4"

    /// Histogram buckets for `Timer`s, spanning RPC latencies from 0.1 ms to 5 s.
    public static let latencyBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5), .seconds(5),
    ]

    /// Creates a registry, bootstraps `MetricsSystem` with a factory writing into it, and returns it
    /// for the admin server. Call it once per process (swift-metrics refuses a second bootstrap).
    public static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(Self.makeFactory(registry: registry))
        return registry
    }

    /// The factory ``bootstrap()`` installs: `Timer`s become histograms with ``latencyBuckets``.
    /// Tests hand it to metrics directly (`Counter(label:dimensions:factory:)`) instead of bootstrapping.
    public static func makeFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        return factory
    }

    /// The registry's metrics in the Prometheus text exposition format (``contentType``).
    public static func render(_ registry: PrometheusCollectorRegistry) -> [UInt8] {
        registry.emitToBuffer()
    }
}
