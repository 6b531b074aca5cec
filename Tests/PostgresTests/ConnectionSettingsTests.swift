import Testing

@testable import Postgres

@Suite("ConnectionSettings")
struct ConnectionSettingsTests {
    private func settings(_ url: String) throws -> [String: [String]] {
        let settings = try ConnectionSettings(PostgresConfiguration(url: url))
        return Dictionary(grouping: zip(settings.keywords, settings.values), by: \.0).mapValues { $0.map(\.1) }
    }

    @Test("connections probe a silent peer (TCP keepalives, a user timeout) unless the URL says otherwise")
    func livenessDefaultsAndOverrides() throws {
        let plain = try settings("postgres://aviary@127.0.0.1:5432/aviary")
        for (keyword, value) in ConnectionSettings.liveness {
            #expect(plain[keyword] == [value], "\(keyword)")
        }
        #expect(plain["keepalives_idle"] == ["30"] && plain["tcp_user_timeout"] == ["60000"])
        let tuned = try settings("postgres://aviary@127.0.0.1:5432/aviary?keepalives_idle=5&tcp_user_timeout=0")
        #expect(tuned["keepalives_idle"] == ["5"] && tuned["tcp_user_timeout"] == ["0"])
        #expect(tuned["keepalives_count"] == ["3"])
    }

    @Test("through a transaction pooler no session settings are sent, but a URL's own options still are")
    func transactionPoolingSendsNoSessionOptions() throws {
        var configuration = PostgresConfiguration(url: "postgres://aviary@127.0.0.1:6432/aviary")
        #expect(try ConnectionSettings(configuration).keywords.contains("options"))
        configuration.options.transactionPooling = true
        let pooled = try ConnectionSettings(configuration)
        #expect(!pooled.keywords.contains("options") && pooled.checksServerSettings)
        #expect(Dictionary(uniqueKeysWithValues: zip(pooled.keywords, pooled.values))["client_encoding"] == "UTF8")
        configuration.url = "postgres://aviary@127.0.0.1:6432/aviary?options=-c%20work_mem%3D8MB"
        let own = try ConnectionSettings(configuration)
        #expect(Dictionary(uniqueKeysWithValues: zip(own.keywords, own.values))["options"] == "-c work_mem=8MB")
        #expect(ConnectionSettings.unsuitable(dateStyle: "ISO, MDY", byteaOutput: "hex") == nil)
        #expect(ConnectionSettings.unsuitable(dateStyle: "SQL, DMY", byteaOutput: "hex")?.contains("DateStyle") == true)
    }
}
