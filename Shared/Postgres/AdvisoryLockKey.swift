/// Keys of Postgres advisory locks: a stable 64-bit hash (FNV-1a) of a name, the same in every
/// process and release, so that the processes taking turns through a lock agree on its key.
public enum AdvisoryLockKey {
    /// The key of the lock called `name` (say `aviary.migrations.auth`).
    public static func of(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
