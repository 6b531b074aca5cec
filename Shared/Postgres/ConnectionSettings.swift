import CLibPQ

/// The libpq connection keywords every connection of a client opens with: the URL's own
/// parameters plus the session settings row decoding relies on.
struct ConnectionSettings: Sendable {
    private(set) var keywords: [String] = []
    private(set) var values: [String] = []
    /// Through a transaction pooler no session settings are sent: the server's own are checked
    /// instead, on each new connection (``PostgresConfiguration/Options/transactionPooling``).
    let checksServerSettings: Bool

    /// What each new connection asks when ``checksServerSettings``, and what it must answer.
    static let serverSettingsQuery = "SELECT current_setting('DateStyle'), current_setting('bytea_output')"

    /// Why the server's settings (the answer to ``serverSettingsQuery``) do not suit row decoding;
    /// nil when they do.
    static func unsuitable(dateStyle: String, byteaOutput: String) -> String? {
        guard !dateStyle.uppercased().hasPrefix("ISO") || byteaOutput != "hex" else { return nil }
        return "through a transaction pooler the server's own settings apply, and they must be DateStyle ISO and "
            + "bytea_output hex (found DateStyle '\(dateStyle)', bytea_output '\(byteaOutput)'): set them for the role "
            + "(ALTER ROLE … SET DateStyle = 'ISO, MDY'; ALTER ROLE … SET bytea_output = 'hex') or in postgresql.conf"
    }

    /// TCP liveness: probes after 30 s of silence, every 10 s, 3 unanswered end it; unacknowledged
    /// data ends it after 60 s.
    static let liveness = [
        ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "60000"),
    ]

    /// Session settings sent in the startup packet, so they cost no extra round trip.
    private static let sessionOptions = "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex"

    init(_ configuration: PostgresConfiguration) throws {
        var parameters: [(String, String)] = []
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(configuration.url, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) }
            PQfreemem(errorMessage)
            throw PostgresError(
                code: .invalidConfiguration, reason: "the Postgres URL cannot be parsed",
                serverMessage: message)
        }
        defer { PQconninfoFree(parsed) }
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                parameters.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        let userOptions = parameters.first { $0.0 == "options" }?.1
        parameters.removeAll {
            ["options", "client_encoding", "application_name", "connect_timeout"].contains($0.0)
        }
        checksServerSettings = configuration.options.transactionPooling
        let timeout = configuration.options.connectTimeout.components
        // libpq takes whole seconds and treats values below 2 as 2.
        let timeoutSeconds = max(2, timeout.seconds + (timeout.attoseconds > 0 ? 1 : 0))
        let options = checksServerSettings ? userOptions : [userOptions, Self.sessionOptions].compactMap { $0 }.joined(separator: " ")
        parameters += options.map { [("options", $0)] } ?? []
        parameters += [
            // PgBouncer passes these two on to each server connection it lends.
            ("client_encoding", "UTF8"),
            ("application_name", configuration.options.applicationName),
            ("connect_timeout", String(timeoutSeconds)),
        ]
        // A server or a network that goes silent mid-statement would hold the statement's caller and
        // its connection until the kernel gives up (15 minutes to hours): TCP keepalives and a user
        // timeout end such a connection within about a minute. Ignored on Unix sockets; a URL's own
        // values win.
        for (keyword, value) in Self.liveness where !parameters.contains(where: { $0.0 == keyword }) {
            parameters.append((keyword, value))
        }
        keywords = parameters.map(\.0)
        values = parameters.map(\.1)
    }
}
