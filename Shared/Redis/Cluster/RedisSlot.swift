/// The hash slot of a key in a Redis Cluster: CRC16 (XMODEM) of the key, or of its hash tag, modulo
/// 16384 (the cluster specification's "Keys distribution model").
///
/// A hash tag is the text between the first `{` and the first `}` after it, when not empty: keys
/// with the same tag share a slot, so one script or multi-key command may touch them all. Aviary
/// names a key's companions `{<key>}:<suffix>`, which puts them in the key's own slot without
/// renaming it (docs/redis-keys.md).
public enum RedisSlot {
    /// How many slots a cluster has.
    public static let count = 16384

    /// The slot of `key`.
    public static func of(_ key: some Collection<UInt8>) -> Int {
        var hashed = key[...]
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            let rest = key[key.index(after: open)...]
            if let close = rest.firstIndex(of: UInt8(ascii: "}")), close != rest.startIndex {
                hashed = key[rest.startIndex..<close]
            }
        }
        var crc: UInt16 = 0
        for byte in hashed {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return Int(crc) & (count - 1)
    }

    /// The slot of `key`'s UTF-8 bytes.
    public static func of(_ key: String) -> Int {
        of(Array(key.utf8))
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
