import AviaryAPI
import Foundation
import RPC

/// Params of `media.beginUpload`.
struct BeginUploadParams: Decodable, Sendable {
    var contentType: MediaType
    var byteSize: Int64
    var sha256: SHA256Hex?
    var purpose: MediaPurpose
    var conversationId: EntityID?
}

/// Params of `media.uploadChunk`.
struct UploadChunkParams: Decodable, Sendable {
    var uploadId: EntityID
    var offset: Int64
    var data: Base64Bytes
}

/// Params naming one upload.
struct UploadParams: Decodable, Sendable {
    var uploadId: EntityID
}

/// Params naming one medium.
struct MediaParams: Decodable, Sendable {
    var mediaId: EntityID
}

/// Params of `media.read`.
struct ReadParams: Decodable, Sendable {
    var mediaId: EntityID
    var offset: Int64
    var length: Int
}

/// A SHA-256 digest as 64 hex digits (either case); kept lower-case.
struct SHA256Hex: Decodable, Sendable, JSONSchemaDescribing {
    let value: String

    init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        let text = (try? decoder.singleValueContainer().decode(String.self))?.lowercased()
        guard let text, text.utf8.count == 64, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw RPCError.validation("\(field) must be a SHA-256 digest: 64 hexadecimal digits", field: field)
        }
        value = text
    }

    static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[0-9a-fA-F]{64}$"] }
}

/// Bytes sent as base64 (RFC 4648 with padding); anything else is a `validation` error.
struct Base64Bytes: Decodable, Sendable, JSONSchemaDescribing {
    let data: Data

    init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        guard let text = try? decoder.singleValueContainer().decode(String.self) else {
            throw RPCError.validation("\(field) must be a base64 string", field: field)
        }
        guard let data = Data(base64Encoded: text) else {
            throw RPCError.validation("\(field) is not valid base64 (RFC 4648, padded, no line breaks)", field: field)
        }
        self.data = data
    }

    static var jsonSchema: JSONValue { ["type": "string", "contentEncoding": "base64"] }
}
