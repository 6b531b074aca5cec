import Locking

extension ServiceResources {
    /// The service's live-delivery hub (``LiveHub``, channels
    /// `aviary:live:<database>:<service>:<userId>`), created on first use. Ask for it in `register`:
    /// creating it adds it to the service group as a background service (``addBackgroundService(_:)``),
    /// which must happen before the group starts.
    /// It runs on an event loop: each message from Redis is pushed from there, not from a thread of
    /// Swift's global pool woken for it.
    public var liveHub: LiveHub {
        let (hub, created) = liveHubSlot.withLock { slot -> (LiveHub, Bool) in
            if let hub = slot { return (hub, false) }
            let hub = LiveHub(service: configuration.service.rawValue, redis: redis, revocations: sessionRevocations, logger: logger)
            slot = hub
            return (hub, true)
        }
        if created { addBackgroundService(OnEventLoop(hub)) }
        return hub
    }
}
