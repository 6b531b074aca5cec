import Foundation
import Testing
import TestSupport

/// Real Mastodon clients against the real gateway and services: Mastodon.py and toot (PyPI),
/// installed in a virtual environment the test makes under `.build/` and keeps for the next run,
/// run the scripts in `Clients/`, which sign in, post with an image, reply, favourite, follow,
/// read and page the home timeline, read notifications, search and delete, asserting as they go.
@Suite("Mastodon clients", .serialized)
struct MastodonClientTests {
    /// The versions the scripts were written against.
    static let packages = ["Mastodon.py[websocket-streaming,webpush]==2.3.3", "toot==0.52.1"]

    private static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")
    private static let packageRoot = clients.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The virtual environment's python, made and filled on first use.
    private static let python = Task { () throws -> String in
        let folder = packageRoot.appendingPathComponent(".build/mastodon-clients").path
        let python = folder + "/bin/python"
        let marker = folder + "/installed-" + packages.joined(separator: "+")
        if FileManager.default.fileExists(atPath: marker) { return python }
        guard let system = findExecutable("python3") else { throw EdgeTestError("python3 is not installed (apt-get install python3-venv)") }
        _ = try await Command(arguments: [system, "-m", "venv", "--clear", folder]).output(timeout: .seconds(120))
        _ = try await Command(arguments: [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + packages)
            .output(timeout: .seconds(600))
        _ = FileManager.default.createFile(atPath: marker, contents: nil)
        return python
    }

    @Test("Mastodon.py: OAuth sign-in (password and authorization code), avatar, post with an image, reply, favourite, follow, home timeline, notifications, search, max_id paging, a home marker, the local and public timelines, the user stream on a WebSocket and as server-sent events, the local stream, a list with its timeline and stream, Web Push (legacy aesgcm and RFC 8291's aes128gcm, VAPID-signed), a pin, a report, delete, a scope refusal")
    func mastodonPy() async throws {
        try await run("mastodon_py_flow.py")
    }

    @Test("toot: login_cli and the browser login, post with an image, follow, home timeline, reply, favourite, thread, notifications, search, --max-id, delete")
    func toot() async throws {
        try await run("toot_flow.py")
    }

    /// Runs a script of `Clients/` for two new users; it passes when it exits 0.
    private func run(_ script: String) async throws {
        let edge = try await GatewayStack.shared()
        let (alice, bob) = (try await edge.register("alice"), try await edge.register("bob"))
        let python = try await Self.python.value
        // Mastodon.py's flow streams, which subscribes to notifications.
        let result = try await SubscriptionTurns.exclusive(edge) { try await Command(
            arguments: [python, Self.clients.appendingPathComponent(script).path, edge.url, alice.username, bob.username, "correct horse battery"],
            environment: ProcessInfo.processInfo.environment.merging(["PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"]) { $1 }
        ).run(timeout: .seconds(180)) }
        #expect(result.status == 0, "\(script) exited with \(result.status):\n\(result.output)")
    }
}
