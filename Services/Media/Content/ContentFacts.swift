import AviaryAPI
/// What the bytes of an upload turned out to be: the type its magic bytes say, and the
/// dimensions or duration read from its headers (nil when the headers do not give them).
struct ContentFacts: Sendable, Equatable {
    var type: MediaType
    var width: Int?
    var height: Int?
    var durationMs: Int64?

    /// Recognises the format by its magic bytes and reads its size; nil for anything media does
    /// not accept (including a file too short to tell).
    static func inspect(_ source: some ByteSource) throws -> ContentFacts? {
        guard let head = try source.bytes(at: 0, count: min(32, Int(source.size))), head.count >= 12 else { return nil }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            return try ImageHeaders.png(source)
        }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) {
            return try ImageHeaders.jpeg(source)
        }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) {
            return ImageHeaders.gif(head)
        }
        if head.ascii(at: 0, count: 4) == "RIFF" && head.ascii(at: 8, count: 4) == "WEBP" {
            return try ImageHeaders.webp(source)
        }
        // A ZIP archive's first local file header (data exports).
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            return ContentFacts(type: .zip)
        }
        if let type = MovieHeaders.type(head) {
            return try MovieHeaders.facts(source, type: type)
        }
        return nil
    }
}
