import AviaryAPI
import Foundation
import Logging
import RPC
import ServiceKit

/// Turns account rows into the `User`s clients see: the one path every method that returns a User
/// takes. Follower counts and the viewer's relations come from social-graph in one batched call,
/// and tweet counts from tweets in one, however many users there are, both at once. When one
/// of them cannot answer, profiles are still served, with zero counts and no relations, and a
/// warning is logged: a profile read never fails for it.
struct UserHydrator: Sendable {
    let resources: ServiceResources
    /// Where `GET /media/<id>` is served (`AVIARY_MEDIA_PUBLIC_URL`), for `profileImageUrl`.
    let mediaBaseURL: String
    /// How long a profile read waits for social-graph or tweets at most.
    let graphTimeout: Duration
    /// While social-graph or tweets is down, reads skip it for a second at a time and log once per 10 seconds.
    let graphOutage = PeerOutage(
        service: "social-graph", missing: "follow counts and relations", pause: .seconds(1), warningInterval: .seconds(10))
    let tweetsOutage = PeerOutage(service: "tweets", missing: "tweet counts", pause: .seconds(1), warningInterval: .seconds(10))

    /// The short form embedded in other services' results; needs no call to social-graph.
    func summary(_ record: UserRecord) -> UserSummary {
        UserSummary(
            id: EntityID(record.id), username: record.username, fullname: record.fullname,
            profileImageUrl: imageURL(record))
    }

    func user(_ record: UserRecord, viewer: Int64?, context: RPCContext?) async -> User {
        await users([record], viewer: viewer, context: context)[0]
    }

    /// `records` as Users, in the same order, seen by `viewer` (nil: anonymous). The viewer's own
    /// profile carries their email.
    func users(_ records: [UserRecord], viewer: Int64?, context: RPCContext?) async -> [User] {
        guard !records.isEmpty else { return [] }
        let details = await details(of: records.map(\.id), viewer: viewer, context: context)
        return assemble(records, details: details, viewer: viewer)
    }

    /// What other services know about some users: counts, and their relations to a viewer.
    struct Details: Sendable {
        var stats: [Int64: UserFollowStats]
        var relations: [Int64: UserRelationship]
        var tweets: [Int64: Int64]
    }

    /// The details of `ids` (both calls at once); it needs only the ids, so a caller that knows
    /// them can ask while it still reads the accounts.
    func details(of ids: [Int64], viewer: Int64?, context: RPCContext?) async -> Details {
        let ids = Array(Set(ids)).sorted().map(EntityID.init)
        async let tweets = tweetCountsByUser(ids, context: context)
        // The relations only where there is someone else to relate to.
        let relating = viewer.flatMap { viewer in ids.contains { $0.value != viewer } ? EntityID(viewer) : nil }
        let stats = await ask(GraphAPI.statsMany, StatsBatchParams(ids: ids, viewerId: relating), outage: graphOutage, context: context)
        var details = Details(stats: [:], relations: [:], tweets: await tweets)
        for entry in stats ?? [] {
            details.stats[entry.userId.value] = entry
            if let isFollowed = entry.isFollowed, let followsYou = entry.followsYou {
                details.relations[entry.userId.value] = UserRelationship(
                    userId: entry.userId, isFollowed: isFollowed, followsYou: followsYou)
            }
        }
        return details
    }

    /// `records` as Users, in the same order, from their `details` as `viewer` sees them.
    func assemble(_ records: [UserRecord], details: Details, viewer: Int64?) -> [User] {
        records.map { record in
            let counts = details.stats[record.id]
            let relation = details.relations[record.id]
            let isSelf = record.id == viewer
            return User(
                id: EntityID(record.id), username: record.username, fullname: record.fullname, bio: record.bio,
                profileImageUrl: imageURL(record), createdAt: record.createdAt,
                stats: UserStats(
                    followers: counts?.followers ?? 0, following: counts?.following ?? 0,
                    tweets: details.tweets[record.id] ?? 0),
                isFollowed: !isSelf && (relation?.isFollowed ?? false), followsYou: !isSelf && (relation?.followsYou ?? false),
                isCurrentUser: isSelf, email: isSelf ? record.email : nil, emailVerified: isSelf ? record.emailVerified : nil)
        }
    }

    private func imageURL(_ record: UserRecord) -> String? {
        record.profileImageID.map { "\(mediaBaseURL)/media/\($0)" }
    }

    /// The viewer's relation to each of `ids` (one `graph.relationships` call), for ranking searches too.
    func relationsByUser(_ ids: [EntityID], viewer: Int64?, context: RPCContext?) async -> [Int64: UserRelationship] {
        guard let viewer else { return [:] }
        let others = ids.filter { $0.value != viewer }
        guard !others.isEmpty else { return [:] }
        let relations = await ask(
            GraphAPI.relationships, RelationshipBatchParams(viewerId: EntityID(viewer), ids: others), outage: graphOutage,
            context: context)
        return Dictionary((relations ?? []).map { ($0.userId.value, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// How many tweets each of `ids` has (one `tweets.statsMany` call).
    private func tweetCountsByUser(_ ids: [EntityID], context: RPCContext?) async -> [Int64: Int64] {
        let stats = await ask(TweetsAPI.statsMany, TweetStatsParams(ids: ids), outage: tweetsOutage, context: context)
        return Dictionary((stats ?? []).map { ($0.userId.value, $0.tweets) }, uniquingKeysWith: { first, _ in first })
    }

    /// `method`'s result, or nil (the outage noted) when its service cannot answer within
    /// ``graphTimeout`` (or the caller's budget, if less).
    private func ask<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, outage: PeerOutage, context: RPCContext?
    ) async -> Result? {
        guard outage.allowsCall else { return nil }
        var timeout = graphTimeout
        if let left = context?.remainingMilliseconds { timeout = min(timeout, .milliseconds(max(1, left))) }
        do {
            return try await resources.client(for: method.service).call(
                method.name, params: params, meta: resources.internalMeta(context), timeout: timeout, idempotent: true,
                as: Result.self)
        } catch {
            outage.failed(
                method: method.name, unreachable: (error as? RPCError)?.reason == "unavailable", error: "\(error)",
                logger: context?.logger ?? resources.logger)
            return nil
        }
    }
}
