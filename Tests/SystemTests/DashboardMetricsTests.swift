import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

/// deploy/observability's dashboard charts only what the services export: no panel waits for a
/// metric that no service has.
@Suite struct DashboardMetricsTests {
    static let dashboard = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/observability/grafana-dashboard.json")

    /// The metric names in the dashboard's queries: the names left once label matchers (`{…}`) and
    /// grouping labels (`by (…)`) are taken out.
    static func chartedMetrics() throws -> Set<String> {
        let text = try String(contentsOf: dashboard, encoding: .utf8)
        let queries = text.matches(of: try Regex(#""expr": "((?:[^"\\]|\\.)*)""#)).compactMap { $0.output[1].substring }
        let labels = try Regex(#"\{[^}]*\}|by \([^)]*\)"#)
        let names = try Regex(#"\b(?:aviary|rpc)_[a-z_]+\b"#)
        return Set(queries.flatMap { query in
            let bare = String(query).replacing(labels, with: "")
            return bare.matches(of: names).map { String(bare[$0.range]) }
        })
    }

    @Test func everyMetricTheDashboardChartsIsExported() async throws {
        let charted = try Self.chartedMetrics()
        #expect(charted.count >= 6, "queries found: \(charted.sorted())")
        let stack = try await ServiceStack.start(ServiceStack.allServices, redisDatabase: 5)
        // A call that answers and one that fails on every service, so that the request, error and
        // latency series exist.
        for service in ServiceStack.allServices {
            let _: JSONValue = try await stack.call(service, "system.health")
            let refused: RPCError? = await {
                do {
                    let _: JSONValue = try await stack.call(service, "rpc.no-such-method")
                    return nil
                } catch { return error as? RPCError }
            }()
            #expect(refused?.code == -32601, "\(service)")
        }
        var exported: Set<String> = []
        for service in ServiceStack.allServices {
            let metrics = try AdminHTTP.get("/metrics", port: stack.process(service).adminPort).body
            for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
                exported.insert(String(line.prefix { $0 != "{" && $0 != " " }))
            }
        }
        let missing = charted.subtracting(exported)
        #expect(missing.isEmpty, "charted but exported by no service: \(missing.sorted())")
    }
}
