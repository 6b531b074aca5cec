import Foundation
import JWTKit
import Logging
import RPC

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Google's token-signing public keys (a JWKS document), from a file or fetched from a URL with a
/// timeout. Kept for an hour; fetched again sooner when a token names a key id not in the set
/// (Google rotates its keys), but at most every 30 seconds so that made-up key ids cannot make the
/// service hammer the URL.
actor GoogleKeySet {
    /// Where the JWKS document comes from.
    enum Source: Sendable {
        case file(String)
        case url(URL)
    }

    private struct Loaded {
        var keys: JWTKeyCollection
        var keyIDs: Set<String>
        var at: ContinuousClock.Instant
    }

    private let source: Source
    private let timeout: Duration
    private let logger: Logger
    private let maxAge = Duration.seconds(3600)
    private let minimumReloadInterval = Duration.seconds(30)
    private var loaded: Loaded?
    private var loading: Task<Loaded, any Error>?

    init(source: Source, timeout: Duration, logger: Logger) {
        self.source = source
        self.timeout = timeout
        self.logger = logger
    }

    /// The keys, once they hold `keyID`; `unauthenticated` when no key of that id exists. Keys past
    /// their hour are still used while the source cannot be reached.
    func keys(containing keyID: String) async throws(RPCError) -> JWTKeyCollection {
        if let loaded, loaded.keyIDs.contains(keyID) {
            guard loaded.at.duration(to: .now) >= maxAge, let fresh = try? await reload(), fresh.keyIDs.contains(keyID)
            else { return loaded.keys }
            return fresh.keys
        }
        if let loaded, loaded.at.duration(to: .now) < minimumReloadInterval {
            throw RPCError.unauthenticated("the ID token was signed with a key Google does not list")
        }
        let fresh = try await reload()
        guard fresh.keyIDs.contains(keyID) else {
            throw RPCError.unauthenticated("the ID token was signed with a key Google does not list")
        }
        return fresh.keys
    }

    /// Loads the document once for all callers waiting at the same time.
    private func reload() async throws(RPCError) -> Loaded {
        let task: Task<Loaded, any Error>
        if let loading {
            task = loading
        } else {
            let source = self.source
            let timeout = self.timeout
            task = Task { try await Self.load(source, timeout: timeout) }
            loading = task
        }
        defer { loading = nil }
        do {
            let fresh = try await task.value
            loaded = fresh
            return fresh
        } catch {
            logger.warning("cannot load Google's signing keys", metadata: ["error": "\(error)"])
            throw RPCError.unavailable("Google's signing keys cannot be loaded right now; retry shortly")
        }
    }

    private static func load(_ source: Source, timeout: Duration) async throws -> Loaded {
        let data: Data
        switch source {
        case .file(let path): data = try Data(contentsOf: URL(fileURLWithPath: path))
        case .url(let url): data = try await fetch(url, timeout: timeout)
        }
        let document = try JSONDecoder().decode(Document.self, from: data)
        let keys = JWTKeyCollection()
        var keyIDs: Set<String> = []
        // Only RSA signing keys for RS256: whatever else a document lists is never trusted.
        for key in document.keys where key.kty == "RSA" && (key.use ?? "sig") == "sig" && (key.alg ?? "RS256") == "RS256" {
            guard let keyID = key.kid, let modulus = key.n, let exponent = key.e else { continue }
            await keys.add(
                rsa: try Insecure.RSA.PublicKey(modulus: modulus, exponent: exponent), digestAlgorithm: .sha256,
                kid: JWKIdentifier(string: keyID))
            keyIDs.insert(keyID)
        }
        return Loaded(keys: keys, keyIDs: keyIDs, at: .now)
    }

    private static func fetch(_ url: URL, timeout: Duration) async throws -> Data {
        var request = URLRequest(url: url)
        request.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response): (Data, URLResponse) = try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let data, let response {
                    continuation.resume(returning: (data, response))
                } else {
                    continuation.resume(throwing: error ?? URLError(.badServerResponse))
                }
            }.resume()
        }
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            throw URLError(.badServerResponse)
        }
        return data
    }

    /// A JWKS document, read loosely: unknown members and key types are ignored.
    private struct Document: Decodable {
        struct Key: Decodable {
            var kty: String
            var kid: String?
            var use: String?
            var alg: String?
            var n: String?
            var e: String?
        }

        var keys: [Key]
    }
}
