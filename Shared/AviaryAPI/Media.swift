import RPC

/// An uploaded image or video as clients see it (contract §2). `url` serves the bytes (signed and
/// expiring for message media); `width`, `height` and `durationMs` are null when not known or not
/// meaningful (no duration for an image). `description` (alt text) and `focus` are the uploader's
/// (`media.describe`).
public struct Media: Codable, Sendable, Hashable {
    /// The most media `media.getMany` looks up in one call.
    public static let lookupLimit = 1000
    public var id: EntityID
    public var url: String
    public var contentType: String
    public var byteSize: Int64
    public var width: Int?
    public var height: Int?
    public var durationMs: Int64?
    public var description: String?
    public var focus: MediaFocus?

    public init(
        id: EntityID, url: String, contentType: String, byteSize: Int64, width: Int? = nil, height: Int? = nil,
        durationMs: Int64? = nil, description: String? = nil, focus: MediaFocus? = nil
    ) {
        self.id = id
        self.url = url
        self.contentType = contentType
        self.byteSize = byteSize
        self.width = width
        self.height = height
        self.durationMs = durationMs
        self.description = description
        self.focus = focus
    }

    private enum CodingKeys: String, CodingKey {
        case id, url, contentType, byteSize, width, height, durationMs, description, focus
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(EntityID.self, forKey: .id)
        url = try container.decode(String.self, forKey: .url)
        contentType = try container.decode(String.self, forKey: .contentType)
        byteSize = try container.decode(Int64.self, forKey: .byteSize)
        width = try container.decodeIfPresent(Int.self, forKey: .width)
        height = try container.decodeIfPresent(Int.self, forKey: .height)
        durationMs = try container.decodeIfPresent(Int64.self, forKey: .durationMs)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        focus = try container.decodeIfPresent(MediaFocus.self, forKey: .focus)
    }

    /// Absent values are written as `null`, as the contract shows them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(url, forKey: .url)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(byteSize, forKey: .byteSize)
        try container.encode(width, forKey: .width)
        try container.encode(height, forKey: .height)
        try container.encode(durationMs, forKey: .durationMs)
        try container.encode(description, forKey: .description)
        try container.encode(focus, forKey: .focus)
    }
}

/// The point of a picture to keep in view when it is cropped: x from -1 (left) to 1 (right), y from
/// -1 (bottom) to 1 (top), as Mastodon's focal points.
public struct MediaFocus: Codable, Sendable, Hashable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}
