extension EventStreamConsumer {
    /// How an ``EventStreamConsumer`` reads, retries and recovers; every default suits production.
    public struct Options: Sendable {
        /// Most entries per read, and so per handler call. Default 100.
        public var batchSize = 100
        /// How long a read waits for new entries (`BLOCK`); also bounds how long a graceful shutdown
        /// waits for an idle consumer. Default 1 s.
        public var blockTimeout: Duration = .seconds(1)
        /// How long an entry must have been pending on a consumer before another may claim it
        /// (`XAUTOCLAIM` min-idle-time). Longer than any handler takes. Default 30 s.
        public var claimMinIdle: Duration = .seconds(30)
        /// How often to look for such entries. Default 10 s.
        /// (Each look, at most every `idleConsumerRetention`, also removes from the group the
        /// consumers that hold nothing and have not read for that long: one is left by every
        /// process that ever consumed, as each names its consumer after itself.)
        public var claimInterval: Duration = .seconds(10)
        /// How long a consumer of the group that holds no pending entries may go without reading
        /// before it is removed from the group (see `claimInterval`). Default 1 hour.
        public var idleConsumerRetention: Duration = .seconds(3600)
        /// Deliveries after which an entry is moved to the dead-letter stream (it is dead-lettered
        /// on delivery `maxDeliveries + 1`, without calling the handler). Default 10.
        public var maxDeliveries = 10
        /// First pause after a handler failure; doubles on each further failure. Default 100 ms.
        public var retryDelay: Duration = .milliseconds(100)
        /// The longest pause after handler failures; keep it below `claimMinIdle`, or another
        /// consumer claims the entries while this one waits. Default 20 s.
        public var maxRetryDelay: Duration = .seconds(20)
        /// Approximate length the dead-letter stream is trimmed to (`MAXLEN ~`). Default 100,000.
        public var deadLetterMaxLength = 100_000
        /// When set, one consumer of the group at a time reads the topic, holding a lease in Redis that
        /// it renews as it goes (before a read, and while a handler runs, once a fifth of the lease
        /// has passed since the last renewal), so events are handled in stream order whichever
        /// instance handles them. The others stand by; one takes over within this time of the
        /// holder's death (or at once when it stops gracefully), first claiming whatever the holder
        /// left pending. `blockTimeout` must take less than four fifths of it. Default nil: all
        /// consumers share the work.
        public var leaseTime: Duration?
        /// With a lease, how long a handler may run: past it, the handler is cancelled (its events
        /// stay pending and count a delivery), renewals stop, and the consumer stands back for a
        /// lease term so that a standby can take the topic over. Bounds how long a handler that hangs
        /// holds the topic up. Default 60 s.
        public var maxHandlerTime: Duration = .seconds(60)
        /// With a lease: asked before the lease is taken or renewed; false gives it up (or leaves it
        /// to another instance), so that instances share the groups of a partitioned piece of work
        /// (``PartitionMembership``). Default nil: any consumer may hold it.
        public var mayHoldLease: (@Sendable () async -> Bool)?
        /// Groups this one takes over from (an earlier partitioning of the same work): created,
        /// the group starts where the furthest behind of them stands (before its oldest pending
        /// entry, else at its last delivered one) instead of at the stream's beginning, and a
        /// predecessor whose consumers have all been idle `idleConsumerRetention` is destroyed, so
        /// that it holds back the stream's trimming no longer. Default nil: none.
        public var isPredecessor: (@Sendable (_ group: String) -> Bool)?
        /// After a read that found several new entries, but fewer than `batchSize`, the consumer
        /// waits this long before it reads again, so that events arriving meanwhile come in one
        /// batch: one read, one handler call and one acknowledgement for several events, at the price
        /// of up to this much delay for those events. A read that found one entry is not followed by
        /// a wait: on a quiet topic every event is handled as soon as it arrives, and the waits begin
        /// when events come faster than they are handled. Default 0.
        public var gatherDelay: Duration = .zero

        public init() {}
    }
}
