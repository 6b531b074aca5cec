import Redis

extension OutboxRelay {
    /// How an ``OutboxRelay`` paces itself; every default suits a production service.
    public struct Options: Sendable {
        /// Most rows moved per transaction (and per Redis pipeline). Default 500.
        public var batchSize = 500
        /// Pause after a batch that was not full, so a trickle of events is sent in batches. Default 20 ms.
        public var busyDelay: Duration = .milliseconds(20)
        /// The shortest pause after a batch that moved several rows, even when nudged: under load,
        /// events leave in batches of this many milliseconds' worth, not a few at a time. A batch of
        /// one row (a quiet outbox) has no such pause. Default 10 ms.
        public var gatherDelay: Duration = .milliseconds(10)
        /// The longest pause while the outbox stays empty (it doubles from `busyDelay`). Default 200 ms.
        public var idleDelay: Duration = .milliseconds(200)
        /// First pause after a failure (Redis or Postgres down); doubles on each further failure. Default 100 ms.
        public var retryDelay: Duration = .milliseconds(100)
        /// The longest pause between retries. Default 5 s.
        public var maxRetryDelay: Duration = .seconds(5)
        /// How often the `aviary_outbox_backlog` gauge is refreshed (one bounded count). Default 1 s.
        public var backlogInterval: Duration = .seconds(1)
        /// How often the relay trims the streams it sends to and checks their length. Default 1 s.
        public var retentionInterval: Duration = .seconds(1)
        /// The most events a topic's stream should hold. The relay trims from each stream what
        /// every consumer group has taken and acknowledged (`XTRIM MINID`); when the events some
        /// group has not acknowledged reach this many (its service down for a long time), the relay
        /// stops sending, and events wait in the outbox on disk, not in Redis' memory, until the
        /// group catches up. A stream no group reads yet keeps its newest this many (`MAXLEN ~`).
        /// Default 1,000,000.
        public var streamMaxLength = 1_000_000
        /// How many replicas of each Redis node written to must have a batch's events (`WAIT`, within
        /// `replicaWait`) before the batch's rows are deleted; a batch short of them fails and is
        /// sent again. 0 does not wait.
        public var replicaAcknowledgements = 0
        /// How long a batch waits for `replicaAcknowledgements` (``RedisReplicaWait``).
        public var replicaWait: Duration = RedisReplicaWait.defaultTimeout

        public init() {}
    }
}
