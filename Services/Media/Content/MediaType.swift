import AviaryAPI
import RPC

/// The content types media accepts, as declared by the uploader and confirmed by magic bytes.
enum MediaType: String, CaseIterable, Sendable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case gif = "image/gif"
    case webp = "image/webp"
    case mp4 = "video/mp4"
    case quicktime = "video/quicktime"

    var isVideo: Bool { self == .mp4 || self == .quicktime }

    /// The declared types as a sentence, for error messages.
    static let listed = allCases.map(\.rawValue).joined(separator: ", ")
}

extension MediaType: Decodable, JSONSchemaDescribing {
    /// Case-insensitive; anything else is a `validation` error naming the field and the accepted types.
    init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        let text = try? decoder.singleValueContainer().decode(String.self)
        guard let text, let type = MediaType(rawValue: text.lowercased()) else {
            throw RPCError.validation("\(field) must be one of \(Self.listed)", field: field)
        }
        self = type
    }

    static var jsonSchema: JSONValue { ["type": "string", "enum": .array(allCases.map { .string($0.rawValue) })] }
}

