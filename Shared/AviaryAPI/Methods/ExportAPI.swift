import Foundation
import RPC

/// auth's methods for a user's copy of their data: a ZIP of JSON files (profile, tweets, likes,
/// bookmarks, followers, following, conversations and messages) and the media files they show,
/// prepared in the background and downloaded once.
public enum ExportAPI {
    public static let requestExport = RPCMethod<Empty, DataExport>(
        "auth.requestExport", access: .user,
        summary: """
            Starts preparing a ZIP of the caller's data (profile.json, tweets.json, likes.json, bookmarks.json, \
            followers.json, following.json, conversations.json, messages/<conversationId>.json, media/<id>.<ext>). \
            Returns the DataExport, preparing; auth.exports shows when it is ready. conflict while another is being \
            prepared; at most 3 a day (rate_limited).
            """)

    public static let exports = RPCMethod<Empty, [DataExport]>(
        "auth.exports", access: .user,
        summary: """
            The caller's last 10 exports, newest first. A ready one has url: signed, it expires (expiresAt) and \
            serves the ZIP once; a fresh url comes with each call until then. Afterwards the export is gone. An \
            export not downloaded within 7 days of being ready is deleted (expired).
            """)
}

/// One data export (`auth.requestExport`).
public struct DataExport: Codable, Sendable, Hashable {
    public var id: EntityID
    public var status: DataExportStatus
    public var createdAt: Date
    /// When the ZIP was ready.
    public var readyAt: Date?
    /// While ready: where to download it, once.
    public var url: String?
    /// When `url` stops working (a later call gives a new one).
    public var expiresAt: Date?
    public var byteSize: Int64?

    public init(
        id: EntityID, status: DataExportStatus, createdAt: Date, readyAt: Date? = nil, url: String? = nil,
        expiresAt: Date? = nil, byteSize: Int64? = nil
    ) {
        self.id = id
        self.status = status
        self.createdAt = createdAt
        self.readyAt = readyAt
        self.url = url
        self.expiresAt = expiresAt
        self.byteSize = byteSize
    }
}

/// Where an export stands.
public enum DataExportStatus: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    /// Being put together.
    case preparing
    /// Ready to download, once.
    case ready
    /// Downloaded (or erased with the account's media): gone.
    case downloaded
    /// Could not be prepared after three tries.
    case failed
    /// Not downloaded within 7 days of being ready: deleted.
    case expired
}
