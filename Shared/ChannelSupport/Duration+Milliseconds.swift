extension Duration {
    /// Whole milliseconds (rounded toward zero): the unit of `_meta.timeoutMs`, of Redis expiries and
    /// of the settings named `…_MS`.
    public var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
