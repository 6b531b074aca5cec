import AviaryJSON
import Foundation
import RPC

/// Reports and suspensions, answered by auth. Anyone signed in may report; the rest is for
/// admins, whose role an operator gives with `aviary admin grant <username>`.
public enum ModerationAPI {
    /// The most tweets, and the most messages, one report names.
    public static let reportedItemsLimit = 20
    /// The longest comment of a report, and the longest reason of a suspension.
    public static let commentLimit = 1000

    public static let report = RPCMethod<ReportParams, ReportReceipt>(
        "moderation.report", access: .user,
        summary: """
            Reports a user (userId) to the admins, with up to 20 of their tweets (tweetIds) and up to 20 of their \
            messages in the caller's conversations (messageIds), kept as they are now so that deleting them does \
            not hide what was reported; a reason (spam, legal, violation or other) and an optional comment (at \
            most 1,000 characters). At most 10 reports an hour per caller.
            """)

    public static let reports = RPCMethod<ReportsParams, Page<Report>>(
        "moderation.reports", access: .user,
        summary: """
            Admins only (forbidden for others): the reports, newest first, open ones (status open, the default) \
            or resolved ones (status resolved); paged with limit and cursor.
            """)

    public static let resolve = RPCMethod<ReportIDParams, Report>(
        "moderation.resolve", access: .user,
        summary: "Admins only: marks a report (reportId) resolved by the caller, and returns it. Resolving twice changes nothing.")

    public static let suspend = RPCMethod<SuspendParams, SuspensionResult>(
        "moderation.suspend", access: .user,
        summary: """
            Admins only: suspends an account (userId) for a reason (1-1,000 characters) its owner is told when \
            signing in is refused. Its sessions end at once, its profile and tweets disappear from every read, \
            and nobody can sign in to it until moderation.unsuspend. Admins cannot be suspended.
            """)

    public static let unsuspend = RPCMethod<UserParams, Empty>(
        "moderation.unsuspend", access: .user,
        summary: "Admins only: lifts an account's suspension (userId); its profile and tweets are shown again.")
}

/// Why a user is reported, as Mastodon's report categories name it.
public enum ReportReason: String, JSONSchemaEnum, Codable, Sendable {
    case spam, legal, violation, other
}

/// Params of `moderation.report`.
public struct ReportParams: Codable, Sendable {
    public var userId: EntityID
    public var tweetIds: [EntityID]?
    public var messageIds: [EntityID]?
    public var reason: ReportReason
    public var comment: String?

    public init(
        userId: EntityID, tweetIds: [EntityID]? = nil, messageIds: [EntityID]? = nil, reason: ReportReason, comment: String? = nil
    ) {
        self.userId = userId
        self.tweetIds = tweetIds
        self.messageIds = messageIds
        self.reason = reason
        self.comment = comment
    }
}

/// What `moderation.report` answers.
public struct ReportReceipt: Codable, Sendable {
    public var reportId: EntityID

    public init(reportId: EntityID) {
        self.reportId = reportId
    }
}

/// Which reports `moderation.reports` lists.
public enum ReportStatus: String, JSONSchemaEnum, Codable, Sendable {
    case open, resolved
}

/// Params of `moderation.reports`.
public struct ReportsParams: Codable, Sendable {
    public var status: ReportStatus?
    public var limit: PageLimit?
    public var cursor: String?

    public init(status: ReportStatus? = nil, limit: PageLimit? = nil, cursor: String? = nil) {
        self.status = status
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params naming one report.
public struct ReportIDParams: Codable, Sendable {
    public var reportId: EntityID

    public init(reportId: EntityID) {
        self.reportId = reportId
    }
}

/// A report as admins see it: who reported whom, why, and the tweets and messages as they were
/// when reported.
public struct Report: Codable, Sendable {
    public var id: EntityID
    /// Nil once the account is gone.
    public var reporter: UserSummary?
    public var user: UserSummary?
    /// When the reported account was suspended, if it is now.
    public var userSuspendedAt: Date?
    public var reason: ReportReason
    public var comment: String
    public var tweets: [Tweet]
    public var messages: [Message]
    public var createdAt: Date
    public var resolvedAt: Date?
    public var resolvedBy: EntityID?

    public init(
        id: EntityID, reporter: UserSummary?, user: UserSummary?, userSuspendedAt: Date?, reason: ReportReason,
        comment: String, tweets: [Tweet], messages: [Message], createdAt: Date, resolvedAt: Date?, resolvedBy: EntityID?
    ) {
        self.id = id
        self.reporter = reporter
        self.user = user
        self.userSuspendedAt = userSuspendedAt
        self.reason = reason
        self.comment = comment
        self.tweets = tweets
        self.messages = messages
        self.createdAt = createdAt
        self.resolvedAt = resolvedAt
        self.resolvedBy = resolvedBy
    }
}

/// Params of `moderation.suspend`.
public struct SuspendParams: Codable, Sendable {
    public var userId: EntityID
    public var reason: String

    public init(userId: EntityID, reason: String) {
        self.userId = userId
        self.reason = reason
    }
}

/// What `moderation.suspend` answers.
public struct SuspensionResult: Codable, Sendable {
    /// How many sessions of the account it ended.
    public var endedSessions: Int

    public init(endedSessions: Int) {
        self.endedSessions = endedSessions
    }
}
