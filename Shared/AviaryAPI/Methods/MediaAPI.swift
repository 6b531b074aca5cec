import RPC

/// media's methods that other services call.
public enum MediaAPI {
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

    public init(from decoder: any Decoder) throws {
        let field = decoder.codingPath.fieldName
        let text = try? decoder.singleValueContainer().decode(String.self)
        guard let text, let purpose = MediaPurpose(rawValue: text) else {
            throw RPCError.validation("\(field) must be one of avatar, tweet, message", field: field)
        }
        self = purpose
    }

    public static var jsonSchema: JSONValue { ["type": "string", "enum": ["avatar", "tweet", "message"]] }
}
