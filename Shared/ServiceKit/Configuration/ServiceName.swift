import Foundation

/// The seven Aviary services, with the names and default ports of the contract (§4), and the
/// public edge in front of them (`gateway`, whose own JSON-RPC port answers only `system.health`
/// and `rpc.discover`).
public enum ServiceName: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    case auth
    case tweets
    case socialGraph = "social-graph"
    case timeline
    case messaging
    case notifications
    case media
    case gateway

    /// The executable's name: `aviary-social-graph`.
    public var executableName: String { "aviary-\(self.rawValue)" }

    /// The default JSON-RPC port: 7101 (auth) … 7107 (media), 7108 (gateway).
    public var defaultRPCPort: Int { 7101 + self.index }

    /// The default admin HTTP port: 7201 (auth) … 7207 (media), 7208 (gateway).
    public var defaultAdminPort: Int { 7201 + self.index }

    /// The default longest JSON-RPC frame (`AVIARY_MAX_FRAME_BYTES`): 1 MiB, but 4 MiB for media,
    /// whose upload chunks travel as base64 inside a frame.
    public var defaultMaxFrameBytes: Int { self == .media ? 4 << 20 : 1 << 20 }

    /// The part of environment variable names that names this service: `SOCIAL_GRAPH` in
    /// `AVIARY_SOCIAL_GRAPH_ADDRESSES`.
    public var environmentKeyPrefix: String {
        self.rawValue.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    public var description: String { self.rawValue }

    /// What the names of this service's methods start with (`graph` of `graph.follow`); none for
    /// the gateway, whose own methods are not routed. auth answers `moderation.` too: reports and
    /// suspensions are about accounts, whose table it keeps.
    public var methodPrefixes: [String] {
        switch self {
        case .auth: ["auth", "moderation"]
        case .socialGraph: ["graph"]
        case .gateway: []
        default: [self.rawValue]
        }
    }

    /// The service whose methods start with `prefix` (`graph` → social-graph).
    public init?(methodPrefix prefix: some StringProtocol) {
        guard let service = Self.allCases.first(where: { $0.methodPrefixes.contains { $0 == prefix } }) else { return nil }
        self = service
    }

    /// The position in the contract's port table.
    private var index: Int {
        switch self {
        case .auth: 0
        case .tweets: 1
        case .socialGraph: 2
        case .timeline: 3
        case .messaging: 4
        case .notifications: 5
        case .media: 6
        case .gateway: 7
        }
    }
}
