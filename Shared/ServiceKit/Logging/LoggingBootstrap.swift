import Logging

/// Installs Aviary's log handlers as the process-wide swift-log backend.
public enum LoggingBootstrap {
    /// Makes every `Logger` in the process write `format` lines to standard error at `level` and above.
    ///
    /// Call it once, first thing in `main` (swift-log refuses a second bootstrap). Logger labels are
    /// not printed: the `service` name identifies the process, and metadata carry the rest.
    /// - Parameter metadataProvider: adds metadata to every line, e.g. a trace id from a task-local.
    public static func bootstrap(
        format: LogFormat,
        level: Logger.Level,
        service: String,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        LoggingSystem.bootstrap(
            { _, provider in
                Self.makeHandler(format: format, level: level, service: service, metadataProvider: provider)
            },
            metadataProvider: metadataProvider
        )
    }

    /// A handler of the given format, for a `Logger` made without the global bootstrap (tests, tools).
    public static func makeHandler(
        format: LogFormat,
        level: Logger.Level,
        service: String,
        metadataProvider: Logger.MetadataProvider? = nil,
        output: LogOutput = .standardError
    ) -> any LogHandler {
        LineLogHandler(format: format, service: service, level: level, metadataProvider: metadataProvider, output: output)
    }
}
