import AviaryJSON
import Foundation
import RPC

/// media's methods: uploads and reads for apps, and the lookup other services make.
public enum MediaAPI {
    public static let beginUpload = RPCMethod<BeginUploadParams, UploadStarted>(
        "media.beginUpload", access: .user,
        summary: """
            Start an upload of byteSize bytes of contentType (image/jpeg, image/png, image/gif, image/webp: up to 16 \
            MiB; video/mp4, video/quicktime: up to 100 MiB; over the limit is too_large). purpose avatar (images \
            only), tweet, or message (with the conversationId the caller belongs to). sha256 (hex), when given, is \
            checked at the end. Returns uploadId and chunkBytes: send the file with media.uploadChunk in chunks of \
            chunkBytes (the last one shorter) before expiresAt (24 h), then call media.finishUpload.
            """)

    public static let uploadChunk = RPCMethod<UploadChunkParams, ChunkReceived>(
        "media.uploadChunk", access: .user,
        summary: """
            Send the chunk of an upload at offset (a multiple of chunkBytes), data as base64. Chunks may come in any \
            order and may be sent again (a repeated chunk counts once). Returns received: the bytes received so far. \
            A chunk of the wrong length, past the declared size, or not base64 is a validation error and nothing is \
            written. Only the user who began the upload may send chunks.
            """)

    public static let finishUpload = RPCMethod<UploadParams, Media>(
        "media.finishUpload", access: .user,
        summary: """
            Finish an upload once every chunk arrived: checks the size, the sha256 if declared, and the content \
            against the declared type (magic bytes), reads width and height (images, video) and durationMs (video), \
            stores it and returns the Media. A failed check is a validation error naming the field and discards the \
            upload. Calling it again returns the same Media. Only the user who began the upload may finish it.
            """)

    public static let get = RPCMethod<MediaParams, Media>(
        "media.get", access: .anonymous,
        summary: """
            A finished Media by mediaId. Message media is visible only to members of its conversation (with a \
            token), and its url is signed and expires; others get not_found.
            """)

    public static let read = RPCMethod<ReadParams, ReadResult>(
        "media.read", access: .anonymous,
        summary: """
            Up to length bytes (at most 512 KiB) of a finished medium from offset, as base64 in data (empty at the \
            end). Message media needs a token of a member of its conversation.
            """)

    public static let describe = RPCMethod<DescribeMediaParams, Media>(
        "media.describe", access: .user,
        summary: """
            Sets the description (alt text, at most 1,500 characters; empty or null removes it) and the focal point \
            (focus {x, y}, each -1 to 1; null removes it) of one of the caller's finished media (not_found for \
            anyone else's). Omitted fields stay. A tweet shows its media as they were when it was posted, for as \
            long as it is cached: describe media before posting. Returns the Media.
            """)

    public static let discard = RPCMethod<DiscardMediaParams, DiscardedMedia>(
        "media.discard", access: .internal,
        summary: """
            Internal. Deletes the tweet, message and export media among mediaIds (at most 1,000) that ownerId \
            uploaded, and the files no other medium holds: what a message deleted for everyone leaves, or an export \
            left undownloaded. Returns {discarded}.
            """)

    public static let beginExportUpload = RPCMethod<BeginExportUploadParams, UploadStarted>(
        "media.beginExportUpload", access: .internal,
        summary: """
            Internal. Begins the upload of a data export (application/zip, purpose export, up to 1 GiB) for ownerId, \
            who then sends and finishes it as any upload of theirs (auth does, in a session of theirs).
            """)

    public static let getMany = RPCMethod<GetMediaParams, [Media]>(
        "media.getMany", access: .internal,
        summary: """
            Internal. The finished media among ids (at most 1,000), in the order asked, leaving out ids that do not \
            exist, are unfinished, or do not match ownerId / purpose / conversationId when given. Message media URLs \
            are signed.
            """)
}

/// Params of `media.getMany`.
public struct GetMediaParams: Codable, Sendable {
    public var ids: [EntityID]
    public var ownerId: EntityID?
    public var purpose: MediaPurpose?
    public var conversationId: EntityID?

    public static let maximum = Media.lookupLimit

    public init(ids: [EntityID], ownerId: EntityID? = nil, purpose: MediaPurpose? = nil, conversationId: EntityID? = nil) {
        self.ids = ids
        self.ownerId = ownerId
        self.purpose = purpose
        self.conversationId = conversationId
    }
}

/// What an upload is for; decides who may read it and where its id is accepted.
public enum MediaPurpose: String, CaseIterable, Codable, Sendable, JSONSchemaDescribing {
    case avatar
    case tweet
    /// Private to a conversation: signed URLs, membership checked.
    case message
    /// A user's data export (a ZIP auth prepares for them): private to its owner, its signed URL
    /// served once. Only auth may upload one.
    case export

    public init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        let text = try? decoder.singleValueContainer().decode(String.self)
        guard let text, let purpose = MediaPurpose(rawValue: text) else {
            throw RPCError.validation("\(field) must be one of avatar, tweet, message, export", field: field)
        }
        self = purpose
    }

    public static var jsonSchema: JSONValue { ["type": "string", "enum": ["avatar", "tweet", "message", "export"]] }
}

/// The content types media accepts, as declared by the uploader and confirmed by magic bytes.
public enum MediaType: String, CaseIterable, Codable, Sendable, JSONSchemaDescribing {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case gif = "image/gif"
    case webp = "image/webp"
    case mp4 = "video/mp4"
    case quicktime = "video/quicktime"
    /// Data exports only (purpose export).
    case zip = "application/zip"

    public var isVideo: Bool { self == .mp4 || self == .quicktime }

    /// The declared types as a sentence, for error messages.
    public static let listed = allCases.map(\.rawValue).joined(separator: ", ")

    /// Case-insensitive; anything else is a `validation` error naming the field and the accepted types.
    public init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        let text = try? decoder.singleValueContainer().decode(String.self)
        guard let text, let type = MediaType(rawValue: text.lowercased()) else {
            throw RPCError.validation("\(field) must be one of \(Self.listed)", field: field)
        }
        self = type
    }

    public static var jsonSchema: JSONValue { ["type": "string", "enum": .array(allCases.map { .string($0.rawValue) })] }
}

/// A SHA-256 digest as 64 hex digits (either case); kept lower-case.
public struct SHA256Hex: Codable, Sendable, JSONSchemaDescribing {
    public let value: String

    /// Nil unless `text` is 64 hexadecimal digits.
    public init?(_ text: String) {
        let text = text.lowercased()
        guard text.utf8.count == 64, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return nil
        }
        value = text
    }

    public init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        guard let text = try? decoder.singleValueContainer().decode(String.self), let digest = SHA256Hex(text) else {
            throw RPCError.validation("\(field) must be a SHA-256 digest: 64 hexadecimal digits", field: field)
        }
        self = digest
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[0-9a-fA-F]{64}$"] }
}

/// Bytes sent as base64 (RFC 4648 with padding); anything else is a `validation` error.
public struct Base64Bytes: Codable, Sendable, JSONSchemaDescribing {
    public let data: Data

    public init(_ data: Data) {
        self.data = data
    }

    public init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        guard let text = try? decoder.singleValueContainer().decode(String.self) else {
            throw RPCError.validation("\(field) must be a base64 string", field: field)
        }
        guard let data = Data(base64Encoded: text) else {
            throw RPCError.validation("\(field) is not valid base64 (RFC 4648, padded, no line breaks)", field: field)
        }
        self.data = data
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(data.base64EncodedString())
    }

    public static var jsonSchema: JSONValue { ["type": "string", "contentEncoding": "base64"] }
}

/// Params of `media.describe`: a field left out stays as it is; one given as null is removed.
public struct DescribeMediaParams: Codable, Sendable {
    public var mediaId: EntityID
    /// Given (a text, or null to remove it) or not.
    public var description: String??
    public var focus: MediaFocus??

    public init(mediaId: EntityID, description: String?? = .none, focus: MediaFocus?? = .none) {
        self.mediaId = mediaId
        self.description = description
        self.focus = focus
    }

    private enum CodingKeys: String, CodingKey {
        case mediaId, description, focus
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        mediaId = try container.decode(EntityID.self, forKey: .mediaId)
        if container.contains(.description) { description = .some(try container.decodeIfPresent(String.self, forKey: .description)) }
        if container.contains(.focus) { focus = .some(try container.decodeIfPresent(MediaFocus.self, forKey: .focus)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(mediaId, forKey: .mediaId)
        if let description { try container.encode(description, forKey: .description) }
        if let focus { try container.encode(focus, forKey: .focus) }
    }
}

/// Params of `media.discard`.
public struct DiscardMediaParams: Codable, Sendable {
    public var ownerId: EntityID
    public var mediaIds: [EntityID]

    public init(ownerId: EntityID, mediaIds: [EntityID]) {
        self.ownerId = ownerId
        self.mediaIds = mediaIds
    }
}

/// The result of `media.discard`: how many media went.
public struct DiscardedMedia: Codable, Sendable {
    public var discarded: Int

    public init(discarded: Int) {
        self.discarded = discarded
    }
}

/// Params of `media.beginExportUpload`.
public struct BeginExportUploadParams: Codable, Sendable {
    public var ownerId: EntityID
    public var byteSize: Int64
    public var sha256: SHA256Hex?

    public init(ownerId: EntityID, byteSize: Int64, sha256: SHA256Hex? = nil) {
        self.ownerId = ownerId
        self.byteSize = byteSize
        self.sha256 = sha256
    }
}

/// Params of `media.beginUpload`.
public struct BeginUploadParams: Codable, Sendable {
    public var contentType: MediaType
    public var byteSize: Int64
    public var sha256: SHA256Hex?
    public var purpose: MediaPurpose
    public var conversationId: EntityID?

    public init(
        contentType: MediaType, byteSize: Int64, sha256: SHA256Hex? = nil, purpose: MediaPurpose, conversationId: EntityID? = nil
    ) {
        self.contentType = contentType
        self.byteSize = byteSize
        self.sha256 = sha256
        self.purpose = purpose
        self.conversationId = conversationId
    }
}

/// Params of `media.uploadChunk`.
public struct UploadChunkParams: Codable, Sendable {
    public var uploadId: EntityID
    public var offset: Int64
    public var data: Base64Bytes

    public init(uploadId: EntityID, offset: Int64, data: Base64Bytes) {
        self.uploadId = uploadId
        self.offset = offset
        self.data = data
    }
}

/// Params naming one upload.
public struct UploadParams: Codable, Sendable {
    public var uploadId: EntityID

    public init(uploadId: EntityID) {
        self.uploadId = uploadId
    }
}

/// Params naming one medium.
public struct MediaParams: Codable, Sendable {
    public var mediaId: EntityID

    public init(mediaId: EntityID) {
        self.mediaId = mediaId
    }
}

/// Params of `media.read`.
public struct ReadParams: Codable, Sendable {
    public var mediaId: EntityID
    public var offset: Int64
    public var length: Int

    public init(mediaId: EntityID, offset: Int64, length: Int) {
        self.mediaId = mediaId
        self.offset = offset
        self.length = length
    }
}

/// Result of `media.beginUpload`: send the file in chunks of `chunkBytes` (the last one shorter),
/// each at an offset that is a multiple of it, before `expiresAt`.
public struct UploadStarted: Codable, Sendable {
    public var uploadId: EntityID
    public var chunkBytes: Int
    public var expiresAt: Date

    public init(uploadId: EntityID, chunkBytes: Int, expiresAt: Date) {
        self.uploadId = uploadId
        self.chunkBytes = chunkBytes
        self.expiresAt = expiresAt
    }
}

/// Result of `media.uploadChunk`: the bytes received so far (each chunk counted once).
public struct ChunkReceived: Codable, Sendable {
    public var received: Int64

    public init(received: Int64) {
        self.received = received
    }
}

/// Result of `media.read`: the bytes as base64.
public struct ReadResult: Codable, Sendable {
    public var data: String

    public init(data: String) {
        self.data = data
    }
}
