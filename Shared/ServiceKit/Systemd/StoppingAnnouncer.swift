import ServiceLifecycle

/// Tells systemd `STOPPING=1` the moment a graceful shutdown begins, before the servers drain, so
/// `systemctl status` shows the unit stopping rather than serving. It is the last service of the
/// group, and the group shuts services down last first.
struct StoppingAnnouncer: Service {
    let notifier: SystemdNotifier

    func run() async throws {
        try? await gracefulShutdown()
        try? notifier.notify("STOPPING=1\nSTATUS=draining")
    }
}
