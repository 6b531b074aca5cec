import Synchronization

/// Finished media by id, from Postgres through a cache: a finished medium never changes, so a
/// cached record is never stale. The cache is emptied when full, which keeps it simple and bounded.
final class MediaCatalog: Sendable {
    private let store: MediaStore
    private let cache = Mutex<[Int64: MediaRecord]>([:])
    private let capacity: Int

    init(store: MediaStore, capacity: Int = 100_000) {
        self.store = store
        self.capacity = capacity
    }

    func record(_ id: Int64) async throws -> MediaRecord? {
        try await records([id])[id]
    }

    /// The finished media among `ids`, by id.
    func records(_ ids: [Int64]) async throws -> [Int64: MediaRecord] {
        let (cached, missing) = cache.withLock { cache in
            var found: [Int64: MediaRecord] = [:]
            var missing: [Int64] = []
            for id in ids {
                if let record = cache[id] { found[id] = record } else { missing.append(id) }
            }
            return (found, missing)
        }
        guard !missing.isEmpty else { return cached }
        var found = cached
        let loaded = try await store.find(missing)
        for (id, record) in loaded { found[id] = record }
        remember(Array(loaded.values))
        return found
    }

    func remember(_ records: [MediaRecord]) {
        guard !records.isEmpty else { return }
        cache.withLock { cache in
            if cache.count + records.count > capacity { cache.removeAll(keepingCapacity: true) }
            for record in records { cache[record.id] = record }
        }
    }
}
