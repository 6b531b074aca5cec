import AviaryAPI
import EventStreams
import RPC

/// The topics the timeline service consumes: `tweets` (fan-out of new tweets, withdrawal of deleted
/// ones) and `graph` (a follow merges the followee's tweets in, an unfollow takes them out).
///
/// Work is acknowledged only after it is done, so a tweet whose fan-out was cut short (Redis down,
/// the process killed) is fanned out again; every step is idempotent (sorted-set adds and removals).
enum TimelineEvents {
    static func consumers(_ timeline: TimelineService) -> [EventConsumerDefinition] {
        var options = EventStreamConsumer.Options()
        // A batch takes well under a second, so entries left pending by a killed instance are
        // taken over after 5 s instead of the default 30 s; a retry never waits as long.
        options.claimMinIdle = .seconds(5)
        options.claimInterval = .seconds(1)
        options.maxRetryDelay = .seconds(4)
        // Every re-read of a failed entry counts as a delivery, and the default of 10 would move a
        // tweet's fan-out to the dead letters after some 30 s of social-graph or tweets being
        // unreachable: it would never reach the followers. 900 rides out an hour's outage.
        options.maxDeliveries = 900
        // Fan-out is shared by every instance: each tweet's events stand alone. A follow and the
        // unfollow after it do not: applied out of order (two instances at once, or one taking over
        // the other's pending entries after an unfollow it handled), the followee's tweets would come
        // back for good. One instance at a time consumes the graph (a lease), in order.
        var graphOptions = options
        graphOptions.leaseTime = .seconds(5)
        return [
            EventConsumerDefinition(topic: TweetsTopic.name, options: options) { batch in
                try await timeline.handleTweetEvents(batch.events)
            },
            EventConsumerDefinition(topic: GraphTopic.name, options: graphOptions) { batch in
                try await timeline.handleGraphEvents(batch.events)
            },
        ]
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
