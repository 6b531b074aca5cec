import AviaryJSON
import Foundation
import RPC

/// A page of a list (contract §2): `items` and the cursor of the next page, null at the end. On
/// the wire its items are `Codable`; a page a reader made of them (the gateway's rendered
/// statuses) need not be.
public struct Page<Item: Sendable>: Sendable {
    public var items: [Item]
    public var nextCursor: String?

    public init(items: [Item], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

extension Page: Codable where Item: Codable {}

/// A validated `limit`: default 20, at most 100 (contract §2).
public struct PageLimit: Codable, Sendable, Hashable {
    public static let `default` = 20
    public static let maximum = 100
    public let value: Int

    public init(_ value: Int = PageLimit.default) {
        self.value = value
    }

    public init(from decoder: any Decoder) throws {
        guard let value = try? decoder.singleValueContainer().decode(Int.self) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation("\(field) must be an integer from 1 to \(Self.maximum)", field: field)
        }
        guard (1...Self.maximum).contains(value) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation("\(field) must be from 1 to \(Self.maximum), got \(value)", field: field)
        }
        self.value = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

extension PageLimit: JSONSchemaDescribing {
    public static var jsonSchema: JSONValue { ["type": "integer", "minimum": 1, "maximum": 100, "default": 20] }
}

/// A keyset position: the sort key and id of the last item of a page, sent as an opaque string.
/// Pages continue strictly after it, so inserts and deletes between pages cause no gaps or repeats.
public struct KeysetCursor: Sendable, Hashable {
    public var key: Int64
    public var id: Int64

    public init(key: Int64, id: Int64) {
        self.key = key
        self.id = id
    }

    /// The opaque wire form.
    /// Unpadded base64url of `"key:id"`, written directly: every page ends with one, and
    /// Foundation's base64 plus three `replacingOccurrences` cost a twentieth of a timeline read.
    public var encoded: String {
        let text = Array("\(key):\(id)".utf8)
        var output: [UInt8] = []
        output.reserveCapacity((text.count * 4 + 2) / 3)
        var index = 0
        while index < text.count {
            let count = min(3, text.count - index)
            var group = UInt32(text[index]) << 16
            if count > 1 { group |= UInt32(text[index + 1]) << 8 }
            if count > 2 { group |= UInt32(text[index + 2]) }
            for position in 0...count {
                output.append(Self.alphabet[Int((group >> (18 - 6 * UInt32(position))) & 63)])
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Reads a cursor from a client; a string this service did not make is a `validation` error.
    public static func decode(_ text: String?, field: String = "cursor") throws(RPCError) -> KeysetCursor? {
        guard let text, !text.isEmpty else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard text.count <= 64, let data = Data(base64Encoded: base64),
            let parts = String(data: data, encoding: .utf8)?.split(separator: ":"), parts.count == 2,
            let key = Int64(parts[0]), let id = Int64(parts[1])
        else {
            throw refusal(field: field)
        }
        return KeysetCursor(key: key, id: id)
    }

    /// The cursor of a list ordered by one id, after `id`: both parts carry it (``decodeID(_:field:)``).
    public static func encodeID(_ id: Int64) -> String {
        KeysetCursor(key: id, id: id).encoded
    }

    /// Reads the cursor of a list ordered by one id, which both parts carry: that id (positive),
    /// or nil for the first page; anything else is a `validation` error.
    public static func decodeID(_ text: String?, field: String = "cursor") throws(RPCError) -> Int64? {
        guard let cursor = try decode(text, field: field) else { return nil }
        guard cursor.key == cursor.id, cursor.id > 0 else { throw refusal(field: field) }
        return cursor.id
    }

    /// The error for a cursor this service did not make.
    public static func refusal(field: String = "cursor") -> RPCError {
        RPCError.validation("\(field) is not a cursor this service returned", field: field)
    }
}

/// Params of a page about one user: their followers or followees, their timeline, their likes.
public struct UserPageParams: Codable, Sendable {
    public var userId: EntityID
    public var limit: PageLimit?
    public var cursor: String?

    public init(userId: EntityID, limit: PageLimit? = nil, cursor: String? = nil) {
        self.userId = userId
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params of a search (`auth.searchUsers`, `tweets.search`): what to look for, and the page.
public struct SearchParams: Codable, Sendable {
    public var query: String
    public var limit: PageLimit?
    public var cursor: String?

    public init(query: String, limit: PageLimit? = nil, cursor: String? = nil) {
        self.query = query
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params of a page of the caller's own (`timeline.home`, `messaging.conversations`).
public struct PageParams: Codable, Sendable {
    public var limit: PageLimit?
    public var cursor: String?

    public init(limit: PageLimit? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }
}
