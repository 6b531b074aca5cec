import AviaryAPI
/// Type, duration and picture size of MP4 and QuickTime files (ISO base media boxes): the `ftyp`
/// brand tells them apart, `moov/mvhd` gives the duration and the first `moov/trak/tkhd` with a
/// picture size gives width and height.
enum MovieHeaders {
    /// Box types a QuickTime file without `ftyp` may start with.
    private static let quickTimeLeadBoxes: Set<String> = ["moov", "mdat", "wide", "free", "skip", "pnot"]

    static func type(_ head: [UInt8]) -> MediaType? {
        let boxType = head.ascii(at: 4, count: 4)
        if boxType == "ftyp" {
            return head.ascii(at: 8, count: 4) == "qt  " ? .quicktime : .mp4
        }
        return quickTimeLeadBoxes.contains(boxType) && head.bigEndian(at: 0, width: 4) >= 8 ? .quicktime : nil
    }

    static func facts(_ source: some ByteSource, type: MediaType) throws -> ContentFacts? {
        var facts = ContentFacts(type: type)
        var walk = BoxWalk(source: source)
        guard let moov = try walk.boxes(in: 0..<source.size).first(where: { $0.type == "moov" }) else {
            return facts
        }
        for box in try walk.boxes(in: moov.content) {
            if box.type == "mvhd" {
                facts.durationMs = try duration(box, source)
            } else if box.type == "trak", facts.width == nil,
                let header = try walk.boxes(in: box.content).first(where: { $0.type == "tkhd" }),
                let size = try pictureSize(header, source)
            {
                facts.width = size.width
                facts.height = size.height
            }
        }
        return facts
    }

    private struct Box {
        var type: String
        var content: Range<Int64>
    }

    /// Lists boxes, reading at most `budget` box headers in all, whatever the nesting: a file made
    /// of thousands of tiny boxes (thousands of `trak`s of thousands of children each) costs no
    /// more than that. A real movie's walk reads a few dozen.
    private struct BoxWalk<Source: ByteSource> {
        let source: Source
        var budget = 4096

        /// The boxes directly inside `range`; stops at the first malformed header, or when the
        /// budget is spent.
        mutating func boxes(in range: Range<Int64>) throws -> [Box] {
            var found: [Box] = []
            var offset = range.lowerBound
            while offset + 8 <= range.upperBound, budget > 0 {
                budget -= 1
                guard let header = try source.bytes(at: offset, count: 8) else { break }
                var boxSize = Int64(header.bigEndian(at: 0, width: 4))
                var headerLength: Int64 = 8
                if boxSize == 1 {
                    guard let large = try source.bytes(at: offset + 8, count: 8) else { break }
                    boxSize = Int64(clamping: large.bigEndian(at: 0, width: 8))
                    headerLength = 16
                } else if boxSize == 0 {
                    boxSize = range.upperBound - offset
                }
                // Compared without adding: a 64-bit size near Int64.max must end the walk, not overflow.
                guard boxSize >= headerLength, boxSize <= range.upperBound - offset else { break }
                found.append(Box(type: header.ascii(at: 4, count: 4), content: offset + headerLength..<offset + boxSize))
                offset += boxSize
            }
            return found
        }
    }

    /// `mvhd`: version 0 has 32-bit times, version 1 64-bit; then the time scale and the duration.
    private static func duration(_ box: Box, _ source: some ByteSource) throws -> Int64? {
        guard let version = try source.bytes(at: box.content.lowerBound, count: 1)?.first else { return nil }
        let wide = version == 1
        let scaleOffset = box.content.lowerBound + (wide ? 20 : 12)
        guard let fields = try source.bytes(at: scaleOffset, count: wide ? 12 : 8) else { return nil }
        let scale = fields.bigEndian(at: 0, width: 4)
        let duration = fields.bigEndian(at: 4, width: wide ? 8 : 4)
        guard scale > 0, duration != (wide ? UInt64.max : UInt64(UInt32.max)) else { return nil }
        let exact = duration.multipliedReportingOverflow(by: 1000)
        if !exact.overflow { return Int64(clamping: exact.partialValue / scale) }
        // Too long to scale exactly; longer than UInt64 milliseconds is no real duration.
        let coarse = (duration / scale).multipliedReportingOverflow(by: 1000)
        return coarse.overflow ? nil : Int64(clamping: coarse.partialValue)
    }

    /// `tkhd`: width and height are the last two fields, 16.16 fixed point; zero for sound tracks.
    private static func pictureSize(_ box: Box, _ source: some ByteSource) throws -> (width: Int, height: Int)? {
        guard box.content.count >= 84, let fields = try source.bytes(at: box.content.upperBound - 8, count: 8) else {
            return nil
        }
        let width = Int(fields.bigEndian(at: 0, width: 4) >> 16)
        let height = Int(fields.bigEndian(at: 4, width: 4) >> 16)
        return width > 0 && height > 0 ? (width, height) : nil
    }
}
