/// The cost of an Argon2id hash. The defaults are OWASP's recommendation (19 MiB, 2 passes, 1 lane);
/// a stored hash made with less is upgraded at the account's next sign-in.
struct Argon2Parameters: Sendable, Hashable {
    var memoryKiB: UInt32 = 19 * 1024
    var iterations: UInt32 = 2
    var parallelism: UInt32 = 1
    var saltBytes = 16
    var hashBytes = 32

    /// The parameters written in an encoded hash (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), nil
    /// when it is not an Argon2id hash of version 19 at all (any such hash is below the current cost).
    init?(encoded: String) {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id", fields[2] == "v=19" else { return nil }
        var values: [Substring: UInt32] = [:]
        for pair in fields[3].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = UInt32(parts[1]) else { return nil }
            values[parts[0]] = value
        }
        guard let memory = values["m"], let iterations = values["t"], let parallelism = values["p"] else { return nil }
        self.memoryKiB = memory
        self.iterations = iterations
        self.parallelism = parallelism
    }

    init() {}

    /// Whether a hash made with `self` costs less than one made with `current` in any respect.
    func isWeaker(than current: Argon2Parameters) -> Bool {
        memoryKiB < current.memoryKiB || iterations < current.iterations || parallelism < current.parallelism
    }
}
