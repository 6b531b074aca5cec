/// The suite's version, shown by `--version`, `system.health` and `rpc.discover`.
public enum AviaryVersion {
    public static let version = "0.1.0"
}
