/// A configuration value that is missing, malformed or out of range.
///
/// The description is a sentence for the operator: it names the variable and what it accepts,
/// e.g. `AVIARY_RPC_PORT must be an integer 0...65535, got 'abc'`. Values of variables that may
/// hold credentials (URLs, the service secret) are never repeated in it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The variable at fault, e.g. `AVIARY_RPC_PORT` (or `AVIARY_CONFIG_FILE` for the file itself).
    public var variable: String
    /// The whole sentence, starting with the variable's name.
    public var message: String

    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }

    public var description: String { self.message }
}
