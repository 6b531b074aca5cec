import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import Redis
import RPC
import ServiceKit

extension TimelineService {
    /// A list's timeline: its members' user timelines merged (``recent(ofAll:before:count:)``, the
    /// cached ones and one call of the tweets service for the rest), their replies kept as the
    /// list's policy says.
    @Sendable func list(_ params: ListPageParams, _ context: RPCContext) async throws -> RawJSON {
        let owner = try context.requireUser()
        let limit = (params.limit ?? PageLimit()).value
        let before = try KeysetCursor.decodeID(params.cursor)
        let feed = try await graph.resources.peers.graph.listFeed(
            ListOwnerParams(listId: params.listId, userId: EntityID(owner)), context: context, passing: ["not_found"])
        let members = feed.memberIds.map(\.value)
        guard !members.isEmpty else { return PageJSON.page([], nextCursor: nil) }
        let count = Self.candidateCount(forPage: limit)
        let candidates: TimelineIDs
        do {
            candidates = try await recent(ofAll: members, before: before, count: count)
        } catch let error as RedisError where error.isTransient {
            context.logger.warning("Redis cannot serve now; reading the list from the tweets service", metadata: ["error": "\(error)"])
            let ids = try await tweets.recentIDs(of: members, limit: count, before: before, context: context)
            candidates = TimelineIDs(ids: ids, more: ids.count == count)
        }
        let replies = ListReplies(policy: feed.repliesPolicy, owner: owner, members: Set(members), graph: graph)
        return try await page(of: candidates.ids, more: candidates.more, limit: limit, viewer: owner, context: context, keep: replies.keep)
    }
}

/// Which replies a list's page keeps (``ListRepliesPolicy``): a reply to its own author, and a
/// repost, always (but with `none`, no reply at all); with `list`, replies to members; with
/// `followed`, replies to members, to the owner and to whom the owner follows (one
/// `graph.relationships` call a page, when a reply goes beyond the list).
struct ListReplies: Sendable {
    let policy: ListRepliesPolicy
    let owner: Int64
    let members: Set<Int64>
    let graph: GraphPeer

    /// The part of a hydrated tweet the policy reads.
    private struct Shape: Decodable {
        struct Ref: Decodable { var id: EntityID }
        var author: Ref
        var replyToUser: Ref?
        var repostedBy: Ref?
    }

    func keep(_ array: [UInt8], _ elements: [Range<Int>]) async throws -> [Range<Int>] {
        let decoder = JSONDecoder()
        // The user each reply answers, nil for a tweet the policy always shows.
        let targets = try elements.map { range -> Int64? in
            let shape = try decoder.decode(Shape.self, from: Data(array[range]))
            guard shape.repostedBy == nil, let target = shape.replyToUser?.id.value else { return nil }
            return policy != .none && target == shape.author.id.value ? nil : target
        }
        var allowed = members
        if policy == .followed {
            allowed.insert(owner)
            let others = Set(targets.compactMap { $0 }).subtracting(allowed)
            if !others.isEmpty { allowed.formUnion(try await graph.followed(by: owner, among: Array(others))) }
        }
        return zip(elements, targets).compactMap { range, target in
            guard let target else { return range }
            return policy != .none && allowed.contains(target) ? range : nil
        }
    }
}
