import Redis

extension TimelineService {
    /// Drops `user`'s timelines once their account is deleted: their home and user sets, their list
    /// of followed celebrities, their place among celebrities. Their tweets, now tombstones, are
    /// left out of others' timelines at read; the unfollows graph sends take them out of the sets.
    /// Idempotent. One command per key: on a cluster they live in different slots.
    func erase(user: Int64) async throws {
        for key in [TimelineKeys.home(user), TimelineKeys.user(user), TimelineKeys.followedCelebrities(user)] {
            _ = try await cache.redis.send(["DEL", RedisArgument(key)])
        }
        _ = try await cache.redis.send(["SREM", RedisArgument(TimelineKeys.celebrities), RedisArgument(user)])
    }
}
