import AviaryAPI
import EventStreams
import RPC
import ServiceKit

/// The social-graph service: who follows whom, over its own tables and the accounts service.
public struct SocialGraphService: Sendable {
    let store: FollowStore
    let blocks: BlockStore
    let mutes: MuteStore
    let lists: ListStore
    let records: FollowRecords
    let directory: UserDirectory
    /// Where the follower and following pages of apps are read (fan-out's id pages stay on the primary).
    let reads: ReplicaReads
    /// The ids of new lists.
    let ids: SnowflakeGenerator

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its
    /// methods. The process keeps in memory up to `AVIARY_GRAPH_LOCAL_USERS` users' totals and
    /// relations (default 10,000, at most about 2 KiB each; 0 keeps none: every profile's counts and
    /// relations come from Postgres).
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let capacity = try resources.configuration.integer("AVIARY_GRAPH_LOCAL_USERS", default: 10_000, in: 0...1_000_000)
        let local =
            capacity == 0
            ? nil : LocalCopy<FollowRecord>(
                .follows, redis: resources.redis, capacity: capacity, lifetime: .seconds(10), markingWriters: true,
                logger: resources.logger)
        let directory = UserDirectory(resources: resources)
        resources.addBackgroundService(
            LocalCopyWatch(redis: resources.redis, watches: [directory.known.watch(on:)] + (local.map { [$0.watch(on:)] } ?? []), logger: resources.logger))
        resources.prepareOutboxEvents(with: LocalCopyKind.announcer([(.follows, FollowRecords.changedBy)], redis: resources.redis))
        let store = FollowStore(postgres: resources.postgres)
        let mutes = MuteStore(postgres: resources.postgres, redis: resources.redis)
        let service = SocialGraphService(
            store: store, blocks: BlockStore(postgres: resources.postgres, redis: resources.redis), mutes: mutes,
            lists: ListStore(postgres: resources.postgres), records: FollowRecords(store: store, local: local),
            directory: directory, reads: resources.replicaReads, ids: resources.ids)
        service.registerMethods(with: &router)
        resources.eraseDeletedAccounts(service.erase(user:))
        resources.addBackgroundService(CountCompactor(postgres: resources.postgres, logger: resources.logger))
        resources.addBackgroundService(PeriodicJob(every: sweepInterval) { [logger = resources.logger, blocks = service.blocks] in
            await expireMutes(mutes, logger: logger)
            await recheckBlocks(blocks, logger: logger)
        })
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(GraphAPI.follow, handler: follow)
        router.register(GraphAPI.unfollow, handler: unfollow)
        router.register(GraphAPI.followers, handler: followers)
        router.register(GraphAPI.following, handler: following)
        router.register(GraphAPI.relationship, handler: relationship)
        router.register(GraphAPI.stats, handler: stats)
        router.register(GraphAPI.suggestions, handler: suggestions)
        router.register(GraphAPI.followerIds, encoded: followerIDs)
        router.register(GraphAPI.followingIds, encoded: followingIDs)
        router.register(GraphAPI.statsMany, handler: statsMany)
        router.register(GraphAPI.relationships, handler: relationships)
        router.register(GraphAPI.block, handler: block)
        router.register(GraphAPI.unblock, handler: unblock)
        router.register(GraphAPI.blocks, handler: blockList)
        router.register(GraphAPI.blockedWith, handler: blockedWith)
        router.register(GraphAPI.mute, handler: mute)
        router.register(GraphAPI.mutedBy, handler: mutedBy)
        router.register(GraphAPI.unmute, handler: unmute)
        router.register(GraphAPI.mutes, handler: muteList)
        router.register(GraphAPI.silencedPairs, handler: silencedPairs)
        router.register(GraphAPI.createList, handler: createList)
        router.register(GraphAPI.updateList, handler: updateList)
        router.register(GraphAPI.deleteList, handler: deleteList)
        router.register(GraphAPI.list, handler: userList)
        router.register(GraphAPI.lists, handler: userLists)
        router.register(GraphAPI.listsWith, handler: listsWith)
        router.register(GraphAPI.addToList, handler: addToList)
        router.register(GraphAPI.removeFromList, handler: removeFromList)
        router.register(GraphAPI.listMembers, handler: listMemberPage)
        router.register(GraphAPI.listFeed, handler: listFeed)
    }
}
