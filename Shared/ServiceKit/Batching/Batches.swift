extension Array {
    /// The array cut into consecutive pieces of at most `size` elements.
    public func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// Runs `lookup` on `items` in batches of at most `size` (another service's batch limit), all at
/// once, and joins the answers (in no particular order). One batch, the usual case, is one call
/// and no child task.
public func inBatches<Item: Sendable, Answer: Sendable>(
    _ items: [Item], of size: Int, _ lookup: @escaping @Sendable ([Item]) async throws -> [Answer]
) async throws -> [Answer] {
    guard items.count > size else { return items.isEmpty ? [] : try await lookup(items) }
    return try await withThrowingTaskGroup(of: [Answer].self) { group in
        for batch in items.chunks(of: size) {
            group.addTask { try await lookup(Array(batch)) }
        }
        var all: [Answer] = []
        all.reserveCapacity(items.count)
        for try await part in group { all += part }
        return all
    }
}
