import EventStreams
import Logging
import Redis

/// Finished media by id, from Postgres through this process's copy (``LocalCopy``): a finished
/// medium never changes, so a copy is good until the medium is erased with its owner's account,
/// which announces it to every process (``MediaStore/erase(owner:)``); an hour at most otherwise.
struct MediaCatalog: Sendable {
    let store: MediaStore
    let copy: LocalCopy<MediaRecord>
    private let redis: RedisClient

    init(store: MediaStore, redis: RedisClient, logger: Logger, capacity: Int = 100_000) {
        self.store = store
        self.redis = redis
        copy = LocalCopy(.media, redis: redis, capacity: capacity, lifetime: .seconds(3600), logger: logger)
    }

    func record(_ id: Int64) async throws -> MediaRecord? {
        try await records([id])[id]
    }

    /// The finished media among `ids`, by id.
    func records(_ ids: [Int64]) async throws -> [Int64: MediaRecord] {
        var (found, epoch) = copy.values(ids)
        let missing = ids.filter { found[$0] == nil }
        guard !missing.isEmpty else { return found }
        let loaded = try await store.find(missing)
        copy.keep(loaded.lazy.map { (key: $0.key, value: $0.value) }, since: epoch)
        found.merge(loaded) { _, new in new }
        return found
    }

    /// Forgets `ids` in every process (a medium taken or erased).
    func forget(_ ids: [Int64]) async throws {
        copy.forget(ids)
        try await LocalCopyKind.media.announce(ids, on: redis)
    }

    /// Keeps `records`, just finished.
    func remember(_ records: [MediaRecord]) {
        let (_, epoch) = copy.values([])
        copy.keep(records.map { (key: $0.id, value: $0) }, since: epoch)
    }
}

extension LocalCopyKind {
    /// Finished media (``MediaCatalog``): the erasure of an account's media announces their ids.
    static let media = LocalCopyKind(service: "media", name: "items", channelPrefix: "aviary:media:forget")
}
