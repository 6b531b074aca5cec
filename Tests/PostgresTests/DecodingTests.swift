import Foundation
import Postgres
import Testing

@Suite("Decoding result values")
struct DecodingTests {
    @Test func decodesEveryTypeFromServerLiterals() async throws {
        try await withTestClient { client in
            let rows = try await client.query(
                """
                SELECT (-32768)::int2 AS small, 2147483647::int4 AS medium, (-9223372036854775808)::int8 AS big,
                       'héllo 🐦'::text AS text, true AS yes, false AS no, 1.5::float8 AS double,
                       123.4500::numeric AS decimal, '2024-05-06 07:08:09.123456+02'::timestamptz AS at,
                       '\\x00ff10'::bytea AS bytes, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS id,
                       ARRAY[1, -2, 3]::int8[] AS numbers, ARRAY['a', 'b c']::text[] AS words,
                       42::int4 AS plain
                """)
            #expect(rows.count == 1)
            let row = try #require(rows.first)
            #expect(rows.columns.first == "small")
            #expect(try row.decode(Int16.self, column: "small") == -32768)
            #expect(try row.decode(Int32.self, column: "medium") == 2_147_483_647)
            #expect(try row.decode(Int64.self, column: "big") == Int64.min)
            #expect(try row.decode(Int.self, column: "plain") == 42)
            #expect(try row.decode(String.self, column: "text") == "héllo 🐦")
            #expect(try row.decode(Bool.self, column: "yes") == true)
            #expect(try row.decode(Bool.self, column: "no") == false)
            #expect(try row.decode(Double.self, column: "double") == 1.5)
            #expect(try row.decode(Decimal.self, column: "decimal") == Decimal(string: "123.45"))
            // Microseconds are dropped: millisecond precision.
            #expect(
                try row.decode(Date.self, column: "at")
                    == Date(timeIntervalSince1970: 1_714_972_089.123))
            #expect(try row.decode([UInt8].self, column: "bytes") == [0x00, 0xFF, 0x10])
            #expect(try row.decode(Data.self, column: "bytes") == Data([0x00, 0xFF, 0x10]))
            #expect(
                try row.decode(UUID.self, column: "id")
                    == UUID(uuidString: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"))
            #expect(try row.decode([Int64].self, column: "numbers") == [1, -2, 3])
            #expect(try row.decode([String].self, column: "words") == ["a", "b c"])
            // Any column decodes as its text.
            #expect(try row.decode(String.self, column: "plain") == "42")
        }
    }

    @Test func nullsDecodeAsNilForOptionalsAndFailOtherwise() async throws {
        try await withTestClient { client in
            let rows = try await client.query(
                """
                SELECT NULL::int2, NULL::int4, NULL::int8, NULL::text, NULL::bool, NULL::float8,
                       NULL::numeric, NULL::timestamptz, NULL::bytea, NULL::uuid, NULL::int8[], NULL::text[]
                """)
            let row = try #require(rows.first)
            #expect(row.isNull(at: 0))
            #expect(try row.decode(Int16?.self, at: 0) == nil)
            #expect(try row.decode(Int32?.self, at: 1) == nil)
            #expect(try row.decode(Int64?.self, at: 2) == nil)
            #expect(try row.decode(String?.self, at: 3) == nil)
            #expect(try row.decode(Bool?.self, at: 4) == nil)
            #expect(try row.decode(Double?.self, at: 5) == nil)
            #expect(try row.decode(Decimal?.self, at: 6) == nil)
            #expect(try row.decode(Date?.self, at: 7) == nil)
            #expect(try row.decode([UInt8]?.self, at: 8) == nil)
            #expect(try row.decode(Data?.self, at: 8) == nil)
            #expect(try row.decode(UUID?.self, at: 9) == nil)
            #expect(try row.decode([Int64]?.self, at: 10) == nil)
            #expect(try row.decode([String]?.self, at: 11) == nil)

            let error = try #require(await postgresError { _ = try row.decode(String.self, at: 3) })
            #expect(error.code == .decodingFailed)
            #expect(error.column == "text")
            #expect(error.description.contains("String"))
            #expect(error.description.contains("NULL"))
        }
    }

    @Test func decodingErrorsNameColumnAndType() async throws {
        try await withTestClient { client in
            let row = try #require(try await client.query("SELECT 'secret value' AS label").first)
            let wrongType = try #require(
                await postgresError { _ = try row.decode(Int64.self, column: "label") })
            #expect(wrongType.code == .decodingFailed)
            #expect(wrongType.column == "label")
            #expect(wrongType.description.contains("label"))
            #expect(wrongType.description.contains("Int64"))
            #expect(!wrongType.description.contains("secret value"))

            let missing = try #require(
                await postgresError { _ = try row.decode(String.self, column: "nope") })
            #expect(missing.code == .decodingFailed)
            let outOfRange = try #require(
                await postgresError { _ = try row.decode(String.self, at: 3) })
            #expect(outOfRange.code == .decodingFailed)

            let overflow = try #require(
                try await client.query("SELECT 40000::int4").first)
            #expect(
                await postgresError { _ = try overflow.decode(Int16.self, at: 0) }?.code
                    == .decodingFailed)
        }
    }

    @Test func decodesTimestampForms() async throws {
        try await withTestClient { client in
            let row = try #require(
                try await client.query(
                    """
                    SELECT '1969-12-31 23:59:59.5+00'::timestamptz, '2024-02-29 12:00:00'::timestamp,
                           '2024-03-01'::date, 'infinity'::timestamptz, '-infinity'::timestamptz,
                           '0044-03-15 12:00:00+00 BC'::timestamptz, '2024-01-01 00:00:00+05:30'::timestamptz
                    """
                ).first)
            #expect(try row.decode(Date.self, at: 0) == Date(timeIntervalSince1970: -0.5))
            #expect(try row.decode(Date.self, at: 1) == Date(timeIntervalSince1970: 1_709_208_000))
            #expect(try row.decode(Date.self, at: 2) == Date(timeIntervalSince1970: 1_709_251_200))
            #expect(try row.decode(Date.self, at: 3) == .distantFuture)
            #expect(try row.decode(Date.self, at: 4) == .distantPast)
            // The Ides of March, 44 BC (proleptic Gregorian, as Postgres counts).
            #expect(
                try row.decode(Date.self, at: 5) == Date(timeIntervalSince1970: -63_517_780_800))
            #expect(try row.decode(Date.self, at: 6) == Date(timeIntervalSince1970: 1_704_047_400))
        }
    }

    @Test func decodesSpecialNumbers() async throws {
        try await withTestClient { client in
            let row = try #require(
                try await client.query(
                    "SELECT 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float8, 'NaN'::numeric, -0.000123::numeric"
                ).first)
            #expect(try row.decode(Double.self, at: 0).isNaN)
            #expect(try row.decode(Double.self, at: 1) == .infinity)
            #expect(try row.decode(Double.self, at: 2) == -.infinity)
            #expect(try row.decode(Decimal.self, at: 3).isNaN)
            #expect(try row.decode(Decimal.self, at: 4) == Decimal(string: "-0.000123"))
        }
    }

    @Test func decodesRawRepresentableTypes() async throws {
        enum Kind: String, PostgresEncodable, PostgresDecodable {
            case like, follow
        }
        try await withTestClient { client in
            let row = try #require(try await client.query("SELECT $1, 'boom'", [Kind.follow]).first)
            #expect(try row.decode(Kind.self, at: 0) == .follow)
            #expect(
                await postgresError { _ = try row.decode(Kind.self, at: 1) }?.code
                    == .decodingFailed)
        }
    }

    @Test func iteratesManyRows() async throws {
        try await withTestClient { client in
            let rows = try await client.query(
                "SELECT n, 'row ' || n, CASE WHEN n % 2 = 0 THEN NULL ELSE n END FROM generate_series(1, 1000) AS n"
            )
            #expect(rows.count == 1000)
            var sum: Int64 = 0
            var nulls = 0
            for row in rows {
                sum += try row.decode(Int64.self, at: 0)
                if try row.decode(Int64?.self, at: 2) == nil { nulls += 1 }
            }
            #expect(sum == 500_500)
            #expect(nulls == 500)
            #expect(try rows[999].decode(String.self, at: 1) == "row 1000")
        }
    }
}
