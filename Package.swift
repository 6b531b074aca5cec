// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // Release builds specialize and inline generic code across modules: the services call RPC's,
    // Postgres' and ServiceKit's generics on every request (docs/perf.md, "Choices in the code").
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

/// The seven services and the public edge (gateway): library `target` built from `Services/<Folder>`,
/// with what each needs beyond ServiceKit and EventStreams, and executable `aviary-<name>` from
/// `Executables/aviary-<name>`.
let services: [(executable: String, target: String, folder: String, extra: [Target.Dependency])] = [
    ("aviary-auth", "AuthService", "Auth", [
        "CArgon2", "AuthTokens", .product(name: "JWTKit", package: "jwt-kit"),
        .product(name: "Crypto", package: "swift-crypto"), .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOExtras", package: "swift-nio-extras"), .product(name: "ZIPFoundation", package: "ZIPFoundation"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
    ]),
    ("aviary-tweets", "TweetsService", "Tweets", [.product(name: "Logging", package: "swift-log")]),
    ("aviary-social-graph", "SocialGraphService", "SocialGraph", []),
    ("aviary-timeline", "TimelineService", "Timeline", []),
    ("aviary-messaging", "MessagingService", "Messaging", [.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
    ("aviary-notifications", "NotificationsService", "Notifications", [
        "AuthTokens",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
    ]),
    ("aviary-gateway", "GatewayService", "Gateway", [
        "AuthTokens", .product(name: "Crypto", package: "swift-crypto"), .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdTLS", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "NIOFoundationCompat", package: "swift-nio"),
        .product(name: "MultipartKit", package: "multipart-kit"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ]),
    ("aviary-media", "MediaService", "Media", [
        .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ]),
]

/// The services link jemalloc (apt libjemalloc-dev) in place of glibc's malloc, which they call for
/// every request, for less CPU per request (docs/perf.md, "Choices in the code"). Linked before libc,
/// its malloc is the one every library of the process calls. Not auth, whose work is password hashes
/// of 19 MiB each: glibc keeps that memory and hands it out again, while jemalloc gives it back to
/// the kernel and every hash faults it in anew.
let glibcMalloc: Set<String> = ["aviary-auth"]

/// The git revision built into every binary (`--version`, `system.health`): AVIARY_REVISION when the
/// release script sets it, else the checkout's commit; only characters safe in a C string literal.
/// SwiftPM re-reads this manifest when the environment changes but not on a new commit, so an
/// incremental debug build may keep an older commit; release builds always set AVIARY_REVISION.
let revision: String = {
    let raw =
        Context.environment["AVIARY_REVISION"]
        ?? Context.gitInformation.map { String($0.currentCommit.prefix(12)) + ($0.hasUncommittedChanges ? "-dirty" : "") }
        ?? "unknown"
    let safe = raw.filter { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.+".contains($0)) }
    return safe.isEmpty ? "unknown" : safe
}()

let nio: [Target.Dependency] = [
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
]
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")

let package = Package(
    name: "aviary",
    platforms: [.macOS(.v15)],
    products: services.map { .executable(name: $0.executable, targets: [$0.executable]) } + [
        .executable(name: "aviary", targets: ["AviaryCLI"]),
        .library(name: "AviaryClient", targets: ["AviaryClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The WebSocket client the gateway's tests talk through (a library that is not ours).
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CEpoll", path: "Shared/CEpoll"),
        .systemLibrary(
            name: "CHiredis", path: "Shared/CHiredis",
            providers: [.apt(["libhiredis-dev"])]),

        .systemLibrary(
            name: "CArgon2", path: "Shared/CArgon2", pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]),
        // What threads share, behind a lock ThreadSanitizer sees (deploy/local/tsan.sh).
        .target(name: "Locking", path: "Shared/Locking", swiftSettings: strict),
        .target(
            name: "ChannelSupport", dependencies: nio + ["Locking"],
            path: "Shared/ChannelSupport", swiftSettings: strict),
        .target(name: "CivilCalendar", path: "Shared/CivilCalendar", swiftSettings: strict),
        .target(name: "AviaryJSON", dependencies: ["CivilCalendar"], path: "Shared/JSON", swiftSettings: strict),
        .target(
            name: "RPC", dependencies: nio + [
                "AviaryJSON", "ChannelSupport", "Locking", logging,
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/RPC", swiftSettings: strict),
        .target(
            name: "Postgres", dependencies: [
                "CLibPQ", "CEpoll", "ChannelSupport", "CivilCalendar", "Locking", logging,
                .product(name: "Metrics", package: "swift-metrics"),
            ] + nio,
            path: "Shared/Postgres", swiftSettings: strict),
        .target(
            name: "Redis", dependencies: ["CHiredis", "ChannelSupport", "Locking", logging, .product(name: "Crypto", package: "swift-crypto")] + nio,
            path: "Shared/Redis", swiftSettings: strict),
        .target(name: "AviaryAPI", dependencies: ["AviaryJSON", "RPC"], path: "Shared/AviaryAPI", swiftSettings: strict),
        .target(
            name: "AviaryClient", dependencies: [
                "AviaryAPI", "AviaryJSON", "RPC", "ChannelSupport", "Locking", logging, .product(name: "WSClient", package: "swift-websocket"),
            ], path: "Clients/AviaryClient", swiftSettings: strict),
        .target(
            name: "AuthTokens", dependencies: [
                "AviaryJSON", "RPC", "Redis", "ChannelSupport", "Locking",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Shared/AuthTokens", swiftSettings: strict),
        .target(
            name: "CBuildInfo", path: "Shared/CBuildInfo",
            cSettings: [.define("AVIARY_REVISION", to: "\"\(revision)\"")]),
        .target(
            name: "EventStreams", dependencies: [
                "AviaryJSON", "RPC", "Postgres", "Redis", "AviaryAPI", "ChannelSupport", "Locking", logging, .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/EventStreams", swiftSettings: strict),
        .target(
            name: "ServiceKit", dependencies: ["AviaryJSON", "EventStreams", "RPC", "Postgres", "Redis", "AviaryAPI", "AuthTokens", "ChannelSupport", "CBuildInfo", "Locking", logging] + nio + [
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Shared/ServiceKit", swiftSettings: strict),
        .executableTarget(
            name: "AviaryCLI", dependencies: [
                "AviaryJSON", "ChannelSupport", "RPC", "ServiceKit", "AviaryClient", "Postgres", "Redis", "AuthTokens", "CArgon2",
                "TimelineService", "AuthService", "AviaryAPI", "Locking", logging,
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "WSClient", package: "swift-websocket"), .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tools/CLI", swiftSettings: strict),

        // Fuzz targets (deploy/local/fuzz.sh runs them under libFuzzer; a plain build replays the
        // files it is given): the JSON decoder against Foundation's, and the RPC frame decoder.
        .target(name: "FuzzSupport", path: "Fuzz/Support", swiftSettings: strict),
        .target(name: "JSONOracle", dependencies: ["AviaryJSON"], path: "Fuzz/JSONOracle", swiftSettings: strict),
        .executableTarget(
            name: "JSONFuzz", dependencies: ["FuzzSupport", "JSONOracle"], path: "Fuzz/JSONFuzz", swiftSettings: strict),
        .executableTarget(
            name: "FrameDecoderFuzz", dependencies: [
                "RPC", "FuzzSupport", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ], path: "Fuzz/FrameDecoderFuzz", swiftSettings: strict),

        .target(
            name: "TestSupport", dependencies: [
                "AviaryJSON", "RPC", "Postgres", "Redis", "AviaryAPI", "Locking", logging, .product(name: "Crypto", package: "swift-crypto"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "JSONTests", dependencies: ["AviaryJSON", "JSONOracle"], swiftSettings: strict),
        .testTarget(name: "RPCTests", dependencies: ["Locking", "AviaryJSON", "RPC", "ChannelSupport", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "PostgresTests", dependencies: ["Locking", "Postgres", "RPC", "TestSupport"] + nio, swiftSettings: strict),
        .testTarget(name: "RedisTests", dependencies: ["Locking", "Redis", "RPC", "TestSupport"] + nio, swiftSettings: strict),
        .testTarget(
            name: "ServiceKitTests", dependencies: ["Locking", "ServiceKit", "Redis", "TestSupport", logging], swiftSettings: strict),
        .testTarget(
            name: "SystemTests", dependencies: ["Locking", "AviaryJSON", "ChannelSupport", "RPC", "AviaryAPI", "Postgres", "Redis", "EventStreams", "ServiceKit", "TestSupport"],
            swiftSettings: strict),
        // The stack under load while its Redis or Postgres is down or stalled: apart from
        // SystemTests, whose other suites run beside one another, because these measure how many
        // calls succeed and how soon, which ten other stacks on a small machine would decide.
        .testTarget(
            name: "FaultTests", dependencies: ["Locking", "AviaryJSON", "AviaryAPI", "RPC", "TestSupport"], swiftSettings: strict),
        // Tests of whole topologies (a Redis Cluster, replicas, several instances of a service):
        // apart from SystemTests, as each test runs many servers and test.sh runs targets in turn.
        .testTarget(
            name: "TopologyTests", dependencies: ["Locking", "AviaryJSON", "AviaryAPI", "Redis", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "EventsTests",
            dependencies: [
                "Locking", "AviaryJSON", "ServiceKit", "EventStreams", "Postgres", "Redis", "RPC", "TestSupport", logging,
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "AuthServiceTests",
            dependencies: [
                "Locking", "AviaryJSON", "RPC", "AviaryAPI", "TestSupport", "AuthTokens", "AuthService", "Postgres", "CArgon2", logging,
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "MessagingServiceTests",
            dependencies: ["Locking", "AviaryJSON", "RPC", "AviaryAPI", "Postgres", "Redis", "MessagingService", "ServiceKit", "TestSupport", logging],
            swiftSettings: strict),
        .testTarget(
            name: "NotificationsServiceTests",
            dependencies: [
                "Locking", "AviaryJSON", "RPC", "AviaryAPI", "ServiceKit", "Postgres", "Redis", "TestSupport", "NotificationsService", logging,
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "TimelineServiceTests",
            dependencies: ["Locking", "AviaryJSON", "RPC", "AviaryAPI", "Postgres", "Redis", "TestSupport", "TimelineService"],
            swiftSettings: strict),
        .testTarget(
            name: "TweetsServiceTests",
            dependencies: ["AviaryJSON", "RPC", "AviaryAPI", "Postgres", "Redis", "EventStreams", "ServiceKit", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "SocialGraphTests",
            dependencies: [
                "Locking", "AviaryJSON", "RPC", "AviaryAPI", "AuthTokens", "Postgres", "Redis", "EventStreams", "ServiceKit", "SocialGraphService",
                "TestSupport", logging,
            ],
            swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Locking", "AviaryJSON", "RPC", "AviaryAPI", "AviaryClient", "Postgres", "Redis", "TestSupport", logging,
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // The Python scripts real Mastodon clients run (MastodonClientTests).
            exclude: ["Clients"],
            swiftSettings: strict),
        .testTarget(
            name: "MediaServiceTests",
            dependencies: [
                "Locking", "AviaryJSON", "RPC", "AviaryAPI", "Postgres", "TestSupport", logging,
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
    ] + services.flatMap { service -> [Target] in
        [
            // The service as a library: its methods and consumers, for the executable and for
            // tests that build it in-process.
            .target(
                name: service.target, dependencies: ["ServiceKit", "EventStreams", "AviaryJSON", "RPC", "AviaryAPI", "Locking", "Postgres", "Redis"] + service.extra,
                path: "Services/\(service.folder)", swiftSettings: strict),
            .executableTarget(
                name: service.executable, dependencies: ["ServiceKit", .target(name: service.target)],
                path: "Executables/\(service.executable)", swiftSettings: strict,
                linkerSettings: glibcMalloc.contains(service.executable) ? [] : [.linkedLibrary("jemalloc")]),
        ]
    }
)

// deploy/local/tsan.sh builds only what the tests it runs need: AVIARY_TEST_TARGETS (comma-separated
// test targets) cuts the package to them, the targets they depend on and the packages those use,
// without products. Unset, the package is whole.
if let wanted = Context.environment["AVIARY_TEST_TARGETS"] {
    let byName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var kept: Set<String> = []
    var packages: Set<String> = []
    var pending = wanted.split(separator: ",").map(String.init)
    while let name = pending.popLast() {
        guard let target = byName[name], kept.insert(name).inserted else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
            case .productItem(_, let package?, _, _): packages.insert(package.lowercased())
            default: break
            }
        }
    }
    package.targets.removeAll { !kept.contains($0.name) }
    package.products = []
    // A package's identity is the last part of its URL, without ".git".
    package.dependencies.removeAll { dependency in
        guard case .sourceControl(_, let location, _) = dependency.kind else { return false }
        let last = location.lowercased().split(separator: "/").last ?? ""
        return !packages.contains(String(last.hasSuffix(".git") ? last.dropLast(4) : last))
    }
}
