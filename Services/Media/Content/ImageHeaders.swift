import AviaryAPI
/// Width and height from the headers of the still-image formats media accepts.
enum ImageHeaders {
    /// PNG: the IHDR chunk must come first (width and height big-endian at 16 and 20).
    static func png(_ source: some ByteSource) throws -> ContentFacts? {
        guard let head = try source.bytes(at: 0, count: 24), head.ascii(at: 12, count: 4) == "IHDR" else { return nil }
        return ContentFacts(
            type: .png, width: Int(head.bigEndian(at: 16, width: 4)), height: Int(head.bigEndian(at: 20, width: 4)))
    }

    /// GIF: the logical screen size, little-endian at 6 and 8.
    static func gif(_ head: [UInt8]) -> ContentFacts {
        ContentFacts(type: .gif, width: Int(head.littleEndian(at: 6, width: 2)), height: Int(head.littleEndian(at: 8, width: 2)))
    }

    /// JPEG: walks the marker segments up to the first start-of-frame (SOF0…SOF15 but DHT, JPG
    /// and DAC), whose height and width follow the sample precision.
    static func jpeg(_ source: some ByteSource) throws -> ContentFacts? {
        var offset: Int64 = 2
        // A real file reaches its frame header within a few dozen segments, with few fill bytes if
        // any: more of either is no image (and each costs a read).
        var fillBytes = 0
        for _ in 0..<1024 {
            guard var marker = try source.bytes(at: offset, count: 2), marker[0] == 0xFF else { return nil }
            // Fill bytes (0xFF) may precede a marker.
            while marker[1] == 0xFF {
                fillBytes += 1
                guard fillBytes <= 4096 else { return nil }
                offset += 1
                guard let next = try source.bytes(at: offset, count: 2) else { return nil }
                marker = next
            }
            let code = marker[1]
            if code == 0x01 || (0xD0...0xD7).contains(code) {
                offset += 2
                continue
            }
            guard code != 0xD9, code != 0xDA, let lengthBytes = try source.bytes(at: offset + 2, count: 2) else { return nil }
            let length = Int64(lengthBytes.bigEndian(at: 0, width: 2))
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(code) && code != 0xC4 && code != 0xC8 && code != 0xCC {
                guard let frame = try source.bytes(at: offset + 4, count: 5) else { return nil }
                return ContentFacts(
                    type: .jpeg, width: Int(frame.bigEndian(at: 3, width: 2)), height: Int(frame.bigEndian(at: 1, width: 2)))
            }
            offset += 2 + length
        }
        return nil
    }

    /// WebP: the first chunk is the lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`) header.
    static func webp(_ source: some ByteSource) throws -> ContentFacts? {
        guard let head = try source.bytes(at: 0, count: 30) else { return nil }
        switch head.ascii(at: 12, count: 4) {
        case "VP8 ":
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            guard head[23] == 0x9D, head[24] == 0x01, head[25] == 0x2A else { return nil }
            return ContentFacts(
                type: .webp, width: Int(head.littleEndian(at: 26, width: 2) & 0x3FFF),
                height: Int(head.littleEndian(at: 28, width: 2) & 0x3FFF))
        case "VP8L":
            guard head[20] == 0x2F else { return nil }
            let bits = head.littleEndian(at: 21, width: 4)
            return ContentFacts(type: .webp, width: Int(bits & 0x3FFF) + 1, height: Int((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            return ContentFacts(
                type: .webp, width: Int(head.littleEndian(at: 24, width: 3)) + 1,
                height: Int(head.littleEndian(at: 27, width: 3)) + 1)
        default:
            return nil
        }
    }
}
