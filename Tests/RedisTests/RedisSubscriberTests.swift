import Redis
import TestSupport
import Testing

@Suite struct RedisSubscriberTests {
    @Test func deliversWhatTheClientPublishes() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let channel = uniqueName("news")
            let subscription = try await subscriber.subscribe(channel)
            #expect(subscription.name == channel)
            let messages = Collector(subscription)
            let payload = (0...255).map { UInt8($0) }
            #expect(try await client.publish(RedisArgument(payload), to: channel) == 1)
            #expect(try await client.publish("second", to: channel) == 1)
            let received = try await messages.wait(for: 2)
            #expect(
                received == [
                    RedisMessage(channel: channel, payload: payload),
                    RedisMessage(channel: channel, payload: Array("second".utf8)),
                ])
            subscription.unsubscribe()
        }
    }

    @Test func multiplexesManyChannelsOnOneConnection() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let prefix = uniqueName("many")
            let channels = (0..<100).map { "\(prefix):\($0)" }
            var collectors: [Collector<RedisMessage>] = []
            for channel in channels {
                collectors.append(Collector(try await subscriber.subscribe(channel)))
            }
            let replies = try await client.pipeline(
                channels.map { ["PUBLISH", RedisArgument($0), RedisArgument($0)] })
            // Exactly one connection is subscribed to each channel.
            #expect(replies.allSatisfy { $0 == .integer(1) })
            for (channel, collector) in zip(channels, collectors) {
                #expect(try await collector.wait(for: 1).map(\.text) == [channel])
            }
            let active =
                try await client.send(["PUBSUB", "CHANNELS", RedisArgument(prefix + ":*")]).array ?? []
            #expect(active.count == 100)
            for collector in collectors { collector.cancel() }
            try await eventually("the channels to be unsubscribed") {
                try await client.send(["PUBSUB", "CHANNELS", RedisArgument(prefix + ":*")]).array?.isEmpty
                    == true
            }
        }
    }

    @Test func subscriptionsToOneChannelShareOneRedisSubscription() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let channel = uniqueName("shared")
            let first = try await subscriber.subscribe(channel)
            let second = try await subscriber.subscribe(channel)
            let firstMessages = Collector(first)
            let secondMessages = Collector(second)
            #expect(try await subscriberCount(client, channel) == 1)
            #expect(try await client.publish("one", to: channel) == 1)
            #expect(try await firstMessages.wait(for: 1).map(\.text) == ["one"])
            #expect(try await secondMessages.wait(for: 1).map(\.text) == ["one"])

            // Unsubscribing one stops its delivery at once; the other keeps the Redis subscription.
            first.unsubscribe()
            try await eventually("the first sequence to end") { firstMessages.isFinished }
            #expect(try await subscriberCount(client, channel) == 1)
            #expect(try await client.publish("two", to: channel) == 1)
            #expect(try await secondMessages.wait(for: 2).map(\.text) == ["one", "two"])
            #expect(firstMessages.collected.map(\.text) == ["one"])

            // The last one out unsubscribes in Redis.
            second.unsubscribe()
            try await eventually("Redis to drop the subscription") {
                try await subscriberCount(client, channel) == 0
            }
            #expect(try await client.publish("three", to: channel) == 0)
            #expect(secondMessages.collected.map(\.text) == ["one", "two"])
        }
    }

    @Test func cancellingTheConsumerEndsTheSubscription() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let channel = uniqueName("cancel")
            let messages = Collector(try await subscriber.subscribe(channel))
            #expect(try await subscriberCount(client, channel) == 1)
            messages.cancel()
            try await eventually("Redis to drop the subscription") {
                try await subscriberCount(client, channel) == 0
            }
            // The channel can be subscribed again right away.
            let again = Collector(try await subscriber.subscribe(channel))
            #expect(try await client.publish("back", to: channel) == 1)
            #expect(try await again.wait(for: 1).map(\.text) == ["back"])
            again.cancel()

            // Releasing a subscription object ends it too.
            _ = try await subscriber.subscribe(channel)
            try await eventually("Redis to drop the released subscription") {
                try await subscriberCount(client, channel) == 0
            }
        }
    }

    @Test func concurrentSubscribeAndUnsubscribeChurnStaysConsistent() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let channel = uniqueName("churn")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        for _ in 0..<20 {
                            try await subscriber.subscribe(channel).unsubscribe()
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await eventually("Redis to drop the subscription") {
                try await subscriberCount(client, channel) == 0
            }
            let messages = Collector(try await subscriber.subscribe(channel))
            #expect(try await client.publish("settled", to: channel) == 1)
            #expect(try await messages.wait(for: 1).map(\.text) == ["settled"])
        }
    }

    @Test func slowConsumersLoseTheOldestMessages() async throws {
        let redis = try await TestServers.redis()
        try await withPubSub(redis) { client, subscriber in
            let channel = uniqueName("overflow")
            let subscription = try await subscriber.subscribe(channel, bufferSize: 2)
            _ = try await client.pipeline(
                (1...5).map { ["PUBLISH", RedisArgument(channel), RedisArgument($0)] })
            try await eventually("three drops") { subscription.droppedMessageCount == 3 }
            var iterator = subscription.makeAsyncIterator()
            #expect(await iterator.next()?.text == "4")
            #expect(await iterator.next()?.text == "5")
        }
    }

    @Test func resubscribesAfterRedisRestarts() async throws {
        try await withPrivateRedis { redis in
            try await withPubSub(redis) { client, subscriber in
                let events = Collector(subscriber.events())
                let channel = uniqueName("restart")
                let messages = Collector(try await subscriber.subscribe(channel))
                #expect(try await client.publish("before", to: channel) == 1)
                try await messages.wait(for: 1)

                try await redis.stop()
                try await events.wait(for: 1)
                try await redis.start()
                try await events.wait(for: 2)
                #expect(events.collected == [.disconnected, .reconnected])

                // The client's connection went down with the server too, which it may not have seen
                // yet (under ThreadSanitizer, once): a PUBLISH that may have arrived is not retried,
                // a PING is, on a new connection, which the PUBLISH then takes.
                #expect(try await client.send(["PING"]).string == "PONG")
                #expect(try await client.publish("after", to: channel) == 1)
                #expect(try await messages.wait(for: 2).map(\.text) == ["before", "after"])
            }
        }
    }

    @Test func shutdownEndsSequencesAndRefusesNewSubscriptions() async throws {
        let redis = try await TestServers.redis()
        let subscriber = RedisSubscriber(configuration: try configuration(redis), logger: testLogger)
        let messages = Collector(try await subscriber.subscribe(uniqueName("closing")))
        let events = Collector(subscriber.events())
        await subscriber.shutdown()
        try await eventually("the sequences to end") { messages.isFinished && events.isFinished }
        let error = try await #require(throws: RedisError.self) { try await subscriber.subscribe("late") }
        #expect(error.code == .closed)
    }

    @Test func subscribeFailsWhenRedisIsDown() async throws {
        try await withPrivateRedis { redis in
            var configuration = try configuration(redis)
            configuration.commandTimeout = .milliseconds(300)
            try await redis.stop()
            let subscriber = RedisSubscriber(configuration: configuration, logger: testLogger)
            let error = try await #require(throws: RedisError.self) {
                try await subscriber.subscribe("nowhere")
            }
            #expect(error.code == .connectionFailed)
            await subscriber.shutdown()
            try await redis.start()
        }
    }
}
