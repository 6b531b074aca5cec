import RPC
import ServiceKit

/// The topics the timeline service consumes: `tweets` (fan-out of new tweets, withdrawal of deleted
/// ones) and `graph` (a follow merges the followee's tweets in, an unfollow takes them out).
///
/// Work is acknowledged only after it is done, so a tweet whose fan-out was cut short (Redis down,
/// the process killed) is fanned out again; every step is idempotent (sorted-set adds and removals).
enum TimelineEvents {
    static var consumers: [EventConsumerDefinition] {
        var options = EventStreamConsumer.Options()
        // A batch takes well under a second, so entries left pending by a killed instance are
        // taken over after 5 s instead of the default 30 s; a retry never waits as long.
        options.claimMinIdle = .seconds(5)
        options.claimInterval = .seconds(1)
        options.maxRetryDelay = .seconds(4)
        return [
            EventConsumerDefinition(topic: "tweets", options: options) { batch, resources in
                try await Timeline.shared(resources).handleTweetEvents(batch.events)
            },
            EventConsumerDefinition(topic: "graph", options: options) { batch, resources in
                try await Timeline.shared(resources).handleGraphEvents(batch.events)
            },
        ]
    }
}

/// The ids an event of the `tweets` or `graph` topic carries, as numbers.
struct EventIDs {
    let event: DeliveredEvent

    func id(_ field: String) -> Int64? {
        event.event.payload[field]?.stringValue.flatMap { Int64($0) }
    }
}

/// Runs `body` for each element with at most `width` running at once.
func forEach<Element: Sendable>(
    _ elements: [Element], concurrently width: Int, _ body: @escaping @Sendable (Element) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(width, elements.count) {
            let element = elements[next]
            group.addTask { try await body(element) }
            next += 1
        }
        while try await group.next() != nil, next < elements.count {
            let element = elements[next]
            group.addTask { try await body(element) }
            next += 1
        }
        try await group.waitForAll()
    }
}
