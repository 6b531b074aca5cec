import AviaryAPI
import EventStreams
import Logging
import RPC
import ServiceKit

/// The timeline service: home timelines filled by fan-out on write into packed Redis strings, user
/// timelines cached beside them, both rebuilt from the tweets and social-graph services when Redis
/// lacks them.
public struct TimelineService: Sendable {
    let settings: TimelineSettings
    let cache: TimelineCache
    let builder: TimelineBuilder
    let celebrities: Celebrities
    let followerLists: FollowerLists
    let graph: GraphPeer
    let tweets: TweetsPeer
    let accounts: AccountsPeer
    let logger: Logger

    init(resources: ServiceResources) throws {
        settings = try TimelineSettings(resources.configuration)
        cache = TimelineCache(redis: resources.redis, capacity: settings.capacity)
        builder = TimelineBuilder(
            redis: resources.redis, capacity: settings.capacity, rebuilds: settings.rebuilds, logger: resources.logger)
        graph = GraphPeer(resources: resources)
        tweets = TweetsPeer(resources: resources)
        accounts = AccountsPeer(resources: resources)
        celebrities = Celebrities(
            redis: resources.redis, graph: graph, threshold: settings.celebrityFollowers,
            cacheLifetime: settings.celebrityCacheSeconds,
            ordinary: OrdinaryAuthors(recount: .seconds(settings.recountSeconds)))
        followerLists = FollowerLists(
            redis: resources.redis, graph: graph, capacity: settings.localFollowerLists, logger: resources.logger)
        logger = resources.logger
    }

    /// `ServiceDefinition.register`: builds the service from the runtime's resources, registers its
    /// methods and its event consumers (which share it: their builds go through the same
    /// ``BuildGate``), and watches for changes of the follower lists it holds.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        resources.keepBlocksInMemory()
        let timeline = try TimelineService(resources: resources)
        timeline.registerMethods(with: &router)
        for consumer in TimelineEvents.consumers(timeline) { resources.consume(consumer) }
        resources.eraseDeletedAccounts(timeline.erase(user:))
        if let lists = timeline.followerLists.local {
            resources.addBackgroundService(LocalCopyWatch(redis: resources.redis, watches: [lists.watch(on:)], logger: resources.logger))
        }
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(TimelineAPI.home, encoded: home)
        router.register(TimelineAPI.user, encoded: user)
        router.register(TimelineAPI.list, encoded: list)
    }

    /// How many ids a read takes from each source for a page of `limit`: one more tells whether
    /// another page exists, and the rest stands in for tweets deleted since they were fanned out.
    static func candidateCount(forPage limit: Int) -> Int {
        limit + limit / 2 + 2
    }
}
