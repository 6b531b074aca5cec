import Redis
import Testing

@Suite struct RedisConfigurationTests {
    @Test func defaults() {
        let configuration = RedisConfiguration()
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 6379)
        #expect(configuration.password == nil)
        #expect(configuration.database == 0)
        #expect(configuration.poolSize == 8)
        #expect(configuration.connectTimeout == .seconds(5))
        #expect(configuration.commandTimeout == .seconds(1))
        #expect(configuration.breakerPause == .milliseconds(200))
    }

    @Test func parsesHostPortAndDatabase() throws {
        let configuration = try RedisConfiguration(url: "redis://cache.internal:6380/3", poolSize: 4)
        #expect(configuration.host == "cache.internal")
        #expect(configuration.port == 6380)
        #expect(configuration.database == 3)
        #expect(configuration.poolSize == 4)
        #expect(configuration.password == nil)
    }

    @Test func parsesPasswordAndUser() throws {
        let passwordOnly = try RedisConfiguration(url: "redis://:s%40cret@127.0.0.1:6379")
        #expect(passwordOnly.password == "s@cret")
        #expect(passwordOnly.username == nil)
        let withUser = try RedisConfiguration(url: "redis://app:pw@localhost")
        #expect(withUser.username == "app")
        #expect(withUser.password == "pw")
        #expect(withUser.port == 6379)
    }

    @Test func parsesIPv6() throws {
        let configuration = try RedisConfiguration(url: "redis://[::1]:7000/1")
        #expect(configuration.host == "::1")
        #expect(configuration.port == 7000)
        #expect(configuration.database == 1)
    }

    @Test func parsesUnixSocketURLs() throws {
        let plain = try RedisConfiguration(url: "unix:///run/redis/redis.sock")
        #expect(plain.socketPath == "/run/redis/redis.sock")
        #expect(plain.database == 0 && plain.password == nil)
        #expect(plain.server == "/run/redis/redis.sock")
        let full = try RedisConfiguration(url: "unix://app:p%40ss@/srv/a%20b/redis@1.sock?db=3", poolSize: 2)
        #expect(full.socketPath == "/srv/a b/redis@1.sock")
        #expect(full.username == "app" && full.password == "p@ss")
        #expect(full.database == 3 && full.poolSize == 2)
        #expect(!full.description.contains("p@ss") && full.description.hasPrefix("unix://app:***@/srv/a b/"))
        #expect(try RedisConfiguration(url: "redis://10.0.0.7:6380").server == "10.0.0.7:6380")
    }

    @Test(arguments: [
        "unix://", "unix://relative/redis.sock", "unix:///", "unix:///r.sock?db=x", "unix:///r.sock?timeout=1",
        "unix://pass@/r.sock", "unix:///r%zz.sock",
        "http://127.0.0.1:6379", "redis://", "redis://host:notaport", "redis://host:70000",
        "redis://host:6379/db", "redis://password@host", "redis://:bad%zz@host",
        "redis+cluster://", "redis+cluster://a:1,,b:2", "redis+cluster://a:1/3", "redis+cluster://a:x",
        "redis+sentinel://s1:26379", "redis+sentinel://s1:26379/", "redis+sentinel://s1,s2/a/b",
    ])
    func rejectsInvalidURLs(_ url: String) {
        #expect {
            try RedisConfiguration(url: url)
        } throws: { error in
            (error as? RedisError)?.code == .invalidConfiguration
        }
    }

    @Test func parsesClusterSeeds() throws {
        let configuration = try RedisConfiguration(url: "redis+cluster://:pw@10.0.0.1:7000,[::1]:7001,node3", poolSize: 2)
        #expect(
            configuration.deployment
                == .cluster(seeds: [
                    RedisEndpoint(host: "10.0.0.1", port: 7000), RedisEndpoint(host: "::1", port: 7001),
                    RedisEndpoint(host: "node3", port: 6379),
                ]))
        #expect(configuration.password == "pw")
        #expect(configuration.poolSize == 2)
        #expect(configuration.description == "redis+cluster://:***@10.0.0.1:7000,[::1]:7001,node3:6379 (poolSize: 2)")
        #expect(try RedisConfiguration(url: "redis+cluster://a:1/0").deployment == .cluster(seeds: [RedisEndpoint(host: "a", port: 1)]))
    }

    @Test func parsesSentinels() throws {
        let configuration = try RedisConfiguration(url: "redis+sentinel://app:pw@s1,s2:26380/my%20master")
        #expect(
            configuration.deployment
                == .sentinel(
                    sentinels: [RedisEndpoint(host: "s1", port: 26379), RedisEndpoint(host: "s2", port: 26380)],
                    master: "my master"))
        #expect(configuration.username == "app")
        #expect(configuration.server == "sentinel s1:26379,s2:26380/my master")
        #expect(!configuration.description.contains("pw"))
    }

    @Test func slotsFollowTheClusterSpecification() {
        // CRC16/XMODEM's check value, and slots `CLUSTER KEYSLOT` gives.
        #expect(RedisSlot.of("123456789") == 0x31C3 & 16383)
        #expect(RedisSlot.of("foo") == 12182)
        #expect(RedisSlot.of("somekey") == 11058)
        // A hash tag: the text inside the first {…}, when not empty.
        #expect(RedisSlot.of("{user1000}.following") == RedisSlot.of("user1000"))
        #expect(RedisSlot.of("{aviary:events:users}:dead") == RedisSlot.of("aviary:events:users"))
        #expect(RedisSlot.of("foo{}{bar}") == RedisSlot.of("foo{}{bar}"))
        #expect(RedisSlot.of("foo{}{bar}") != RedisSlot.of("bar"))
        #expect(RedisSlot.of("foo{{bar}}zap") == RedisSlot.of("{bar"))
        #expect(RedisSlot.of("foo{bar}{zap}") == RedisSlot.of("bar"))
    }

    @Test func descriptionHidesThePassword() throws {
        let configuration = try RedisConfiguration(url: "redis://:hunter2@127.0.0.1:6379/2")
        #expect(!configuration.description.contains("hunter2"))
        #expect(configuration.description.contains("127.0.0.1:6379/2"))
    }

    @Test func scriptSHA1MatchesKnownDigests() {
        #expect(RedisScript("").sha1 == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(RedisScript("abc").sha1 == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            RedisScript("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").sha1
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(
            RedisScript(String(repeating: "a", count: 1000)).sha1
                == "291e9a6c66994949b57ba5e650361e98fc36b1ba")
        // Lengths around the padding boundary.
        #expect(
            RedisScript(String(repeating: "a", count: 55)).sha1 == "c1c8bbdc22796e28c0e15163d20899b65621d65a")
        #expect(
            RedisScript(String(repeating: "a", count: 56)).sha1 == "c2db330f6083854c99d4b5bfb6e8f29f201be699")
        #expect(
            RedisScript(String(repeating: "a", count: 64)).sha1 == "0098ba824b5c16427bd7a1122a5a442a25ec644d")
    }

    @Test func argumentsEncodeAsRedisExpects() {
        #expect(RedisArgument(42).bytes == Array("42".utf8))
        #expect(RedisArgument(Int64(-7)).bytes == Array("-7".utf8))
        #expect(RedisArgument(1.5).bytes == Array("1.5".utf8))
        #expect(RedisArgument(-Double.infinity).bytes == Array("-inf".utf8))
        let literal: RedisArgument = "GET"
        #expect(literal.bytes == Array("GET".utf8))
    }

    @Test func valueAccessors() {
        #expect(RESPValue.bulkString(Array("12".utf8)).int == 12)
        #expect(RESPValue.integer(5).int == 5)
        #expect(RESPValue.simpleString("OK").string == "OK")
        #expect(RESPValue.bulkString([0xff]).bytes == [0xff])
        #expect(RESPValue.null.string == nil)
        #expect(RESPValue.null.isNull)
        #expect(RESPValue.array([.integer(1)]).array == [.integer(1)])
        #expect(RESPValue.error("ERR x").string == nil)
    }
}
