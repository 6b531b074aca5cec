import AuthTokens
import AviaryAPI
import AviaryJSON
import EventStreams
import Foundation
import Logging
import RPC
import ServiceKit

extension AuthService {
    func report(_ params: ReportParams, context: RPCContext) async throws -> ReportReceipt {
        let caller = try context.requireUser()
        guard params.userId.value != caller else { throw RPCError.validation("you cannot report yourself", field: "userId") }
        let tweetIDs = try (params.tweetIds ?? []).values(atMost: ModerationAPI.reportedItemsLimit, field: "tweetIds")
        let unique = Array(Set(tweetIDs))
        let messageIDs = Array(Set(try (params.messageIds ?? []).values(atMost: ModerationAPI.reportedItemsLimit, field: "messageIds")))
        let comment = try TextRules.text(params.comment ?? "", field: "comment", allowed: 0...ModerationAPI.commentLimit)
        try await limits.checkReport(userID: caller)
        guard try await users.find(id: params.userId.value) != nil else { throw RPCError.notFound("no such user") }
        // The tweets as they are now, kept with the report: deleting them later hides nothing.
        var tweets = RawJSON(unchecked: Array("[]".utf8))
        if !unique.isEmpty {
            tweets = try await resources.peers.tweets.getMany.encoded(
                GetTweetsParams(ids: unique.map(EntityID.init), omitDeleted: true), context: context)
            let found = try tweets.decode([Tweet].self)
            guard found.count == unique.count, found.allSatisfy({ $0.author.id == params.userId }) else {
                throw RPCError.validation("tweetIds must name tweets of userId that are not deleted", field: "tweetIds")
            }
        }
        // The messages likewise, as the reporter may see them: sent by the reported user in a
        // conversation of the reporter's.
        var messages = RawJSON(unchecked: Array("[]".utf8))
        if !messageIDs.isEmpty {
            messages = try await resources.peers.messaging.reportable.encoded(
                ReportableParams(reporterId: EntityID(caller), senderId: params.userId, messageIds: messageIDs.map(EntityID.init)),
                context: context)
            guard try messages.decode([Message].self).count == messageIDs.count else {
                throw RPCError.validation(
                    "messageIds must name messages of userId, not deleted, in conversations of yours", field: "messageIds")
            }
        }
        let id = resources.ids.next()
        try await moderation.insertReport(
            id: id, reporterID: caller, userID: params.userId.value, reason: params.reason, comment: comment,
            tweets: String(decoding: tweets.bytes, as: UTF8.self), messages: String(decoding: messages.bytes, as: UTF8.self))
        context.logger.notice("a user was reported", metadata: ["report.id": "\(id)", "user.id": "\(params.userId.value)"])
        return ReportReceipt(reportId: EntityID(id))
    }

    func reports(_ params: ReportsParams, context: RPCContext) async throws -> Page<Report> {
        try await requireAdmin(context)
        let limit = (params.limit ?? PageLimit()).value
        let rows = try await moderation.reports(
            params.status ?? .open, before: try KeysetCursor.decodeID(params.cursor), limit: limit)
        let items = try await assemble(rows)
        return Page(items: items, nextCursor: rows.count == limit ? rows.last.map { KeysetCursor.encodeID($0.id) } : nil)
    }

    func resolve(_ params: ReportIDParams, context: RPCContext) async throws -> Report {
        let admin = try await requireAdmin(context)
        guard let row = try await moderation.resolve(params.reportId.value, by: admin) else {
            throw RPCError.notFound("no such report")
        }
        return try await assemble([row])[0]
    }

    func suspend(_ params: SuspendParams, context: RPCContext) async throws -> SuspensionResult {
        let admin = try await requireAdmin(context)
        let reason = try TextRules.text(params.reason, field: "reason", allowed: 1...ModerationAPI.commentLimit)
        guard params.userId.value != admin else { throw RPCError.validation("you cannot suspend yourself", field: "userId") }
        switch try await moderation.suspend(params.userId.value, reason: reason, announce: resources.sessionRevocations.revoke(sessionIDs:)) {
        case .unknownUser:
            throw RPCError.notFound("no such user")
        case .admin:
            throw RPCError.conflict("admins cannot be suspended: take the role back first (aviary admin revoke)", field: "userId")
        case .suspended(let ended):
            OutboxRelay.nudge()
            await resources.replicaReads.recordWrite(to: [Self.profile(params.userId.value)])
            context.logger.notice(
                "an account was suspended", metadata: ["user.id": "\(params.userId.value)", "admin.id": "\(admin)"])
            return SuspensionResult(endedSessions: ended.count)
        }
    }

    func unsuspend(_ params: UserParams, context: RPCContext) async throws -> Empty {
        let admin = try await requireAdmin(context)
        guard let lifted = try await moderation.unsuspend(params.userId.value) else { throw RPCError.notFound("no such user") }
        if lifted {
            OutboxRelay.nudge()
            await resources.replicaReads.recordWrite(to: [Self.profile(params.userId.value)])
            context.logger.notice(
                "a suspension was lifted", metadata: ["user.id": "\(params.userId.value)", "admin.id": "\(admin)"])
        }
        return Empty()
    }

    /// The caller, when an admin; `forbidden` for everyone else.
    @discardableResult
    private func requireAdmin(_ context: RPCContext) async throws -> Int64 {
        let caller = try context.requireUser()
        guard try await moderation.isAdmin(caller) else { throw RPCError.forbidden("only admins may do this") }
        return caller
    }

    /// `rows` as Reports, with their users' summaries from one query.
    private func assemble(_ rows: [ModerationStore.ReportRow]) async throws -> [Report] {
        let records = try await users.find(ids: Array(Set(rows.flatMap { [$0.reporterID, $0.userID] })))
        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return try rows.map { row in
            Report(
                id: EntityID(row.id), reporter: byID[row.reporterID].map(profiles.summary),
                user: byID[row.userID].map(profiles.summary), userSuspendedAt: byID[row.userID]?.suspension?.at,
                reason: row.reason, comment: row.comment, tweets: try RawJSON(unchecked: Array(row.tweets.utf8)).decode([Tweet].self),
                messages: try RawJSON(unchecked: Array(row.messages.utf8)).decode([Message].self), createdAt: row.createdAt, resolvedAt: row.resolvedAt, resolvedBy: row.resolvedBy.map(EntityID.init))
        }
    }
}
