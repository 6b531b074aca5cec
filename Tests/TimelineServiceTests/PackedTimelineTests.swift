import Foundation
import Redis
import Testing
import TestSupport
@testable import TimelineService

extension TimelineServiceTests {
/// The timeline scripts and reads (``TimelineCache``) against a model: random adds in any order
/// (appends, splices, merges), removes (by search and by a pass), trims and pages after cursors.
@Suite("packed timelines against a model")
struct PackedTimelineTests {
    @Test("random adds, removes and pages agree with a sorted set of ids", .timeLimit(.minutes(1)))
    func againstModel() async throws {
        let stack = try await TimelineStack.shared()
        let capacity = 40
        let cache = TimelineCache(redis: stack.stack.redis, capacity: capacity)
        let key = "aviary:timeline:home:test-packed-\(UUID().uuidString)"
        var generator = SystemRandomNumberGenerator()
        var model: [Int64] = []  // ascending
        var state = PackedTimeline.State.whole
        try await stack.stack.redis.set(key, to: RedisArgument(PackedTimeline(state: .whole, ids: []).bytes))
        for round in 0..<400 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                // Mostly newer than everything, sometimes older or already there; one id or many.
                let count = [1, 1, 1, 3, 20, 200].randomElement(using: &generator)!
                let top = (model.last ?? 1_000) + 50
                let ids = (0..<count).map { _ in
                    Bool.random(using: &generator) ? top + Int64.random(in: 0..<50, using: &generator) : Int64.random(in: 1_000..<top, using: &generator)
                }
                try await cache.add(ids, toExisting: [key], batch: 1)
                model = Array(Set(model + ids)).sorted()
            case 6..<9:
                let count = [1, 2, 30].randomElement(using: &generator)!
                let ids = (0..<count).compactMap { _ in model.randomElement(using: &generator) } + [Int64.random(in: 1..<1_000, using: &generator)]
                try await cache.remove(ids, from: [key], batch: 1)
                model.removeAll { ids.contains($0) }
            default:
                let before = Bool.random(using: &generator) ? nil : model.randomElement(using: &generator)
                let count = Int.random(in: 1...30, using: &generator)
                let slice = try await cache.read([key], before: before, count: count, lifetime: 60).slices[0]
                let stored = try #require(PackedTimeline(try await stack.stack.redis.get(key) ?? []))
                let expected = Array(stored.ids.filter { before == nil || $0 < before! }.suffix(count).reversed())
                #expect(slice.ids == expected, "round \(round): a page of \(count) before \(before.map(String.init) ?? "the top")")
            }
            // The stored ids are the model's newest, at least the capacity of them (or all), and
            // at most the trim length; a whole timeline that lost any is truncated.
            let stored = try #require(PackedTimeline(try await stack.stack.redis.get(key) ?? []), "round \(round)")
            #expect(stored.ids == Array(stored.ids.sorted()), "round \(round): out of order")
            #expect((min(capacity, model.count)...cache.trimLength).contains(stored.ids.count), "round \(round): \(stored.ids.count) entries")
            #expect(Array(model.suffix(stored.ids.count)) == stored.ids, "round \(round): not the newest of the model")
            if stored.ids.count < model.count {
                state = .truncated
                // What was trimmed away is gone for good: the model keeps what the timeline keeps.
                model = stored.ids
            }
            #expect(stored.state == state, "round \(round)")
        }
        _ = try await stack.stack.redis.delete([key])
    }

    @Test("a page answered from a build's contents is the page its set would answer")
    func pageOfBuildContents() {
        let ids = (1...10).map(Int64.init).shuffled()
        let whole = TimelineBuilder.Contents(ids: ids, whole: true)
        let cut = TimelineBuilder.Contents(ids: ids, whole: false)
        #expect(whole.page(before: nil, count: 3)?.ids == [10, 9, 8] && whole.page(before: nil, count: 3)?.more == true)
        #expect(whole.page(before: 8, count: 3)?.ids == [7, 6, 5])
        // The oldest entries: all there is when whole; past what the build read when not.
        #expect(whole.page(before: 4, count: 5)?.ids == [3, 2, 1] && whole.page(before: 4, count: 5)?.more == false)
        #expect(cut.page(before: 4, count: 5) == nil)
        #expect(whole.page(before: 4, count: 3)?.more == false && cut.page(before: 4, count: 3)?.more == true)
    }
}
}
