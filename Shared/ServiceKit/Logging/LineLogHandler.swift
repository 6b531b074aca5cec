import Logging

/// Writes each event as one line to an output, in either format (``LogFormat``): the handler that
/// ``LoggingBootstrap`` installs.
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let format: LogFormat
    /// The service named on every line.
    public let service: String
    private let output: LogOutput

    public init(
        format: LogFormat,
        service: String,
        level: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        output: LogOutput = .standardError
    ) {
        self.format = format
        self.service = service
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let metadata = LogLine.merge(handler: self.metadata, provider: self.metadataProvider, event: event.metadata)
        var line = LogLine()
        switch format {
        case .text: line.appendText(event, service: service, metadata: metadata)
        case .json: line.appendJSON(event, service: service, metadata: metadata)
        }
        self.output.write(line.bytes)
    }
}
