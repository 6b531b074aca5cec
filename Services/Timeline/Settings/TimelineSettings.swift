import ServiceKit

/// The timeline service's tunables, from `AVIARY_TIMELINE_*` (each default documented).
struct TimelineSettings: Sendable {
    /// Entries kept per timeline set (`AVIARY_TIMELINE_CAPACITY`, default 800).
    var capacity: Int
    /// Authors with more followers than this are not fanned out; their tweets are merged into home
    /// timelines at read time (`AVIARY_TIMELINE_CELEBRITY_FOLLOWERS`, default 10,000).
    var celebrityFollowers: Int
    /// A home timeline not read for this long expires, and fan-out skips it until its owner returns
    /// and it is rebuilt (`AVIARY_TIMELINE_INACTIVE_DAYS`, default 30).
    var inactiveSeconds: Int
    /// Lifetime of a cached user timeline after its last read (`AVIARY_TIMELINE_USER_CACHE_SECONDS`, default 1 day).
    var userCacheSeconds: Int
    /// Lifetime of a user's cached list of followed celebrities (`AVIARY_TIMELINE_CELEBRITY_CACHE_SECONDS`,
    /// default 1 hour); follows, unfollows and new celebrities invalidate it before that.
    var celebrityCacheSeconds: Int
    /// How long an author counted at or under the celebrity threshold is taken to stay there before
    /// fan-out asks social-graph again (`AVIARY_TIMELINE_RECOUNT_SECONDS`, default 60).
    var recountSeconds: Int
    /// Timeline sets changed per Redis script call during fan-out (`AVIARY_TIMELINE_FANOUT_BATCH`, default 1,000).
    var fanOutBatch: Int
    /// Authors whose follower lists fan-out keeps in memory, 8 KiB each at most
    /// (`AVIARY_TIMELINE_LOCAL_FOLLOWER_LISTS`, default 5,000; 0 keeps none: every tweet's fan-out
    /// asks social-graph).
    var localFollowerLists: Int
    /// Timeline builds one instance runs at a time, after a read found the set missing (Redis
    /// flushed, restarted empty, a user back after a long absence); the reads of timelines waiting
    /// for theirs are answered from tweets and social-graph (`AVIARY_TIMELINE_REBUILDS`, default 4).
    var rebuilds: Int

    init(_ configuration: ServiceConfiguration) throws {
        capacity = try configuration.integer("AVIARY_TIMELINE_CAPACITY", default: 800, in: 10...10_000)
        celebrityFollowers = try configuration.integer(
            "AVIARY_TIMELINE_CELEBRITY_FOLLOWERS", default: 10_000, in: 0...1_000_000_000)
        inactiveSeconds = try configuration.integer("AVIARY_TIMELINE_INACTIVE_DAYS", default: 30, in: 1...3650) * 86_400
        userCacheSeconds = try configuration.integer(
            "AVIARY_TIMELINE_USER_CACHE_SECONDS", default: 86_400, in: 1...31_536_000)
        celebrityCacheSeconds = try configuration.integer(
            "AVIARY_TIMELINE_CELEBRITY_CACHE_SECONDS", default: 3600, in: 1...604_800)
        recountSeconds = try configuration.integer("AVIARY_TIMELINE_RECOUNT_SECONDS", default: 60, in: 0...86_400)
        fanOutBatch = try configuration.integer("AVIARY_TIMELINE_FANOUT_BATCH", default: 1000, in: 1...10_000)
        localFollowerLists = try configuration.integer("AVIARY_TIMELINE_LOCAL_FOLLOWER_LISTS", default: 5000, in: 0...1_000_000)
        rebuilds = try configuration.integer("AVIARY_TIMELINE_REBUILDS", default: 4, in: 1...256)
    }
}
