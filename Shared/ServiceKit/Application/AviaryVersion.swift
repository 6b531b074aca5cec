import CBuildInfo

/// The suite's version and the git revision it was built from, shown by `--version`,
/// `system.health` and `rpc.discover`.
public enum AviaryVersion {
    public static let version = "0.1.0"
    /// The commit (12 hex digits, `-dirty` when the tree had changes), or what the release build set.
    public static let revision = String(cString: aviary_build_revision())
    /// `0.1.0 (3f2a9c81d0be)`: what `--version` prints after the program's name.
    public static var description: String { "\(version) (\(revision))" }
}
