import Crypto
import Foundation

/// Small files made in the test: a PNG (stored deflate blocks), a baseline JPEG (one grey value,
/// the shortest Huffman tables) and a GIF, all complete; a WebP header with filler data; and MP4 /
/// QuickTime files with the boxes media reads (`ftyp`, `moov/mvhd`, `moov/trak/tkhd`, `mdat`).
public enum MediaFixtures {
    /// A `width`×`height` RGB PNG whose pixels come from `seed`, so that different seeds give different files.
    public static func png(width: Int, height: Int, seed: UInt8 = 0) -> [UInt8] {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width {
                raw += [UInt8(truncatingIfNeeded: x &* 7 &+ Int(seed)), UInt8(truncatingIfNeeded: y &* 13), seed]
            }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let final: UInt8 = offset + count == raw.count ? 1 : 0
            zlib += [final, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            zlib += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        zlib += bigEndian(UInt32(adler32(raw)))

        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        file += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0])
        file += chunk("IDAT", zlib)
        file += chunk("IEND", [])
        return file
    }

    /// A `width`×`height` grey baseline JPEG.
    public static func jpeg(width: Int, height: Int) -> [UInt8] {
        var file: [UInt8] = [0xFF, 0xD8]
        file += [0xFF, 0xDB, 0x00, 67, 0x00] + [UInt8](repeating: 1, count: 64)
        file += [0xFF, 0xC0, 0x00, 11, 8] + bigEndian16(height) + bigEndian16(width) + [1, 1, 0x11, 0]
        let oneCode: [UInt8] = [1] + [UInt8](repeating: 0, count: 15) + [0x00]
        file += [0xFF, 0xC4, 0x00, 20, 0x00] + oneCode
        file += [0xFF, 0xC4, 0x00, 20, 0x10] + oneCode
        file += [0xFF, 0xDA, 0x00, 8, 1, 1, 0x00, 0, 63, 0]
        // Each 8×8 block: DC difference 0 (code 0) and end of block (code 0): two zero bits.
        let bits = 2 * ((width + 7) / 8) * ((height + 7) / 8)
        file += [UInt8](repeating: 0, count: bits / 8)
        if bits % 8 != 0 { file.append(UInt8(0xFF >> (bits % 8))) }
        file += [0xFF, 0xD9]
        return file
    }

    /// A GIF89a whose logical screen is `width`×`height`, holding one 1×1 image (LZW: clear, 0, end).
    public static func gif(width: Int, height: Int) -> [UInt8] {
        var file = ascii("GIF89a") + littleEndian16(width) + littleEndian16(height) + [0x80, 0, 0]
        file += [0, 0, 0, 0xFF, 0xFF, 0xFF]
        file += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3B]
        return file
    }

    /// The header of a lossless WebP (`VP8L`) of `width`×`height`, then filler bitstream bytes.
    public static func webp(width: Int, height: Int) -> [UInt8] {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14
        let payload: [UInt8] = [0x2F, UInt8(bits & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8((bits >> 16) & 0xFF), UInt8(bits >> 24)]
            + [UInt8](repeating: 0, count: 11)
        let chunk = ascii("VP8L") + littleEndian32(UInt32(payload.count)) + payload
        return ascii("RIFF") + littleEndian32(UInt32(4 + chunk.count)) + ascii("WEBP") + chunk
    }

    /// A movie of `durationMs` with a `width`×`height` video track and `payload` bytes of media data.
    public static func movie(quickTime: Bool = false, durationMs: UInt32, width: Int, height: Int, payload: Int = 256) -> [UInt8] {
        let brand = quickTime ? "qt  " : "isom"
        let ftyp = box("ftyp", ascii(brand) + bigEndian(UInt32(0x200)) + ascii(brand) + ascii(quickTime ? "qt  " : "mp41"))
        let matrix = bigEndian(UInt32(0x10000)) + [UInt8](repeating: 0, count: 12) + bigEndian(UInt32(0x10000))
            + [UInt8](repeating: 0, count: 12) + bigEndian(UInt32(0x4000_0000))
        var mvhd: [UInt8] = [0, 0, 0, 0] + bigEndian(UInt32(0)) + bigEndian(UInt32(0))
        mvhd += bigEndian(UInt32(1000)) + bigEndian(durationMs) + bigEndian(UInt32(0x10000)) + [0x01, 0x00]
        mvhd += [UInt8](repeating: 0, count: 10) + matrix + [UInt8](repeating: 0, count: 24) + bigEndian(UInt32(2))
        var tkhd: [UInt8] = [0, 0, 0, 3] + bigEndian(UInt32(0)) + bigEndian(UInt32(0)) + bigEndian(UInt32(1))
        tkhd += bigEndian(UInt32(0)) + bigEndian(durationMs) + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, 0]
        tkhd += matrix + bigEndian(UInt32(width << 16)) + bigEndian(UInt32(height << 16))
        let moov = box("moov", box("mvhd", mvhd) + box("trak", box("tkhd", tkhd)))
        let mdat = box("mdat", (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        return ftyp + moov + mdat
    }

    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = ascii(type) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    private static func box(_ type: String, _ content: [UInt8]) -> [UInt8] {
        bigEndian(UInt32(8 + content.count)) + ascii(type) + content
    }

    private static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func bigEndian16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    private static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    private static func littleEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}
