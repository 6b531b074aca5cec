import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit

/// Which service answers a method, and which methods the edge may serve: the public ones each
/// service lists in its own `rpc.discover` (the `x-access` of every method), learnt on first use
/// and again every ``refreshInterval``. The services stay the one source of their contract; a
/// method a service does not list as public is not found here, whatever a client calls it.
final class MethodDirectory: Sendable {
    /// The services behind the edge, in the order of the merged document.
    static let services = ServiceName.allCases.filter { !$0.methodPrefixes.isEmpty }

    /// How long a service's list of methods is trusted before it is asked again.
    static let refreshInterval = Duration.seconds(60)

    /// One service's methods as its `rpc.discover` described them.
    struct Listing: Sendable {
        /// Every method's access.
        var access: [String: RPCAccess]
        /// The document's public method descriptions, as JSON.
        var publicMethods: [JSONValue]
        var fetched: ContinuousClock.Instant
    }

    private let listings = Locked<[ServiceName: Listing]>([:])
    private let resources: ServiceResources

    init(resources: ServiceResources) {
        self.resources = resources
    }

    static func service(of method: String) -> ServiceName? {
        guard let dot = method.firstIndex(of: ".") else { return nil }
        return ServiceName(methodPrefix: method[..<dot])
    }

    /// The service that answers `method` through the edge; `methodNotFound` for an unknown or
    /// internal one, `unavailable` while the service cannot say which methods it has.
    func route(_ method: String) async throws(RPCError) -> ServiceName {
        guard let service = Self.service(of: method) else { throw .methodNotFound(method) }
        let listing = try await listing(of: service)
        guard let access = listing.access[method], access != .internal else { throw .methodNotFound(method) }
        return service
    }

    /// One OpenRPC document of every public method of the seven services; a service that cannot be
    /// asked now is left out and named in `x-unavailable`.
    func mergedDocument() async -> JSONValue {
        var methods: [JSONValue] = []
        var missing: [JSONValue] = []
        for service in Self.services {
            do {
                methods += try await listing(of: service).publicMethods
            } catch {
                missing.append(.string(service.rawValue))
            }
        }
        var document: [String: JSONValue] = [
            "openrpc": "1.3.2",
            "info": ["title": "Aviary", "version": .string(AviaryVersion.version)],
            "methods": .array(methods),
        ]
        if !missing.isEmpty { document["x-unavailable"] = .array(missing) }
        return .object(document)
    }

    private func listing(of service: ServiceName) async throws(RPCError) -> Listing {
        let cached = listings.withLock { $0[service] }
        if let cached, ContinuousClock.now - cached.fetched < Self.refreshInterval { return cached }
        do {
            let fresh = try await fetch(service)
            listings.withLock { $0[service] = fresh }
            return fresh
        } catch {
            // A list learnt before still serves while the service cannot be asked.
            if let cached { return cached }
            resources.logger.warning(
                "a service's methods could not be learnt", metadata: ["peer.service": "\(service)", "error": "\(error)"])
            throw .unavailable("the \(service) service could not answer; retry shortly")
        }
    }

    private func fetch(_ service: ServiceName) async throws -> Listing {
        let document = try await resources.client(for: service)
            .call("rpc.discover", meta: RequestMeta(service: resources.serviceCredential), as: JSONValue.self)
        var access: [String: RPCAccess] = [:]
        var publicMethods: [JSONValue] = []
        for method in document["methods"]?.arrayValue ?? [] {
            guard let name = method["name"]?.stringValue, Self.service(of: name) == service,
                let level = method["x-access"]?.stringValue.flatMap(RPCAccess.init(rawValue:))
            else { continue }
            access[name] = level
            if level != .internal { publicMethods.append(method) }
        }
        return Listing(access: access, publicMethods: publicMethods, fetched: .now)
    }
}
