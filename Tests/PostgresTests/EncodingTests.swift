import Foundation
import Postgres
import Testing

@Suite("Sending parameters")
struct EncodingTests {
    @Test func roundTripsEveryParameterType() async throws {
        try await withTestClient { client in
            let date = Date(timeIntervalSince1970: 1_714_972_089.123)
            let id = UUID()
            let row = try #require(
                try await client.query(
                    """
                    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                           pg_typeof($1)::text, pg_typeof($8)::text, pg_typeof($13)::text
                    """,
                    [
                        true, Int16.min, Int32.max, Int64.min, 42, 0.1, "text", date, id,
                        [UInt8]([1, 2]),
                        [Int64]([1, -2]), ["x", "y"], PostgresValue.json(#"{"a": [1, 2]}"#),
                    ]
                ).first)
            #expect(try row.decode(Bool.self, at: 0) == true)
            #expect(try row.decode(Int16.self, at: 1) == .min)
            #expect(try row.decode(Int32.self, at: 2) == .max)
            #expect(try row.decode(Int64.self, at: 3) == .min)
            #expect(try row.decode(Int.self, at: 4) == 42)
            #expect(try row.decode(Double.self, at: 5) == 0.1)
            #expect(try row.decode(String.self, at: 6) == "text")
            #expect(try row.decode(Date.self, at: 7) == date)
            #expect(try row.decode(UUID.self, at: 8) == id)
            #expect(try row.decode([UInt8].self, at: 9) == [1, 2])
            #expect(try row.decode([Int64].self, at: 10) == [1, -2])
            #expect(try row.decode([String].self, at: 11) == ["x", "y"])
            #expect(try row.decode(String.self, at: 12) == #"{"a": [1, 2]}"#)
            #expect(try row.decode(String.self, at: 13) == "boolean")
            #expect(try row.decode(String.self, at: 14) == "timestamp with time zone")
            #expect(try row.decode(String.self, at: 15) == "jsonb")
        }
    }

    @Test func optionalsAndNullParameters() async throws {
        try await withTestClient { client in
            let missing: String? = nil
            let present: Int64? = 7
            let row = try #require(
                try await client.query(
                    "SELECT $1::text IS NULL, $2, $3::int8 IS NULL",
                    [missing, present, PostgresValue.null]
                ).first)
            #expect(try row.decode(Bool.self, at: 0))
            #expect(try row.decode(Int64?.self, at: 1) == 7)
            #expect(try row.decode(Bool.self, at: 2))
        }
    }

    @Test(arguments: [
        "emoji 🐦‍🔥👩🏽‍💻", "right-to-left \u{200F}שלום\u{200E} mark", "'; DROP TABLE x; --",
        "\"quoted\" \\ backslash",
        "", "   ", "combining e\u{301}", "日本語", "line\nbreak\ttab", "\u{10FFFF}",
    ])
    func textRoundTrips(_ text: String) async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE notes (body text NOT NULL)")
            try await client.execute("INSERT INTO notes (body) VALUES ($1)", [text])
            let stored = try #require(
                try await client.query("SELECT body, $1 = body FROM notes", [text]).first)
            #expect(try stored.decode(String.self, at: 0) == text)
            #expect(try stored.decode(Bool.self, at: 1))
            // The table is still there: parameters are bound, never spliced into the SQL.
            #expect(
                try await client.query("SELECT count(*) FROM notes").first?.decode(
                    Int64.self, at: 0) == 1)
        }
    }

    @Test func textWithNulByteIsRejectedClearly() async throws {
        try await withTestClient(poolSize: 1) { client in
            let error = try #require(
                await postgresError { _ = try await client.query("SELECT $1", ["a\0b"]) })
            #expect(error.code == .encodingFailed)
            #expect(error.description.contains("$1"))
            #expect(
                await postgresError { _ = try await client.query("SELECT $1", [["ok", "\0"]]) }?
                    .code == .encodingFailed)
            #expect(
                await postgresError {
                    _ = try await client.query("SELECT $1", [PostgresValue.json("\0")])
                }?.code == .encodingFailed)
            #expect(
                await postgresError { _ = try await client.query("SELECT 1\0; DROP TABLE x") }?.code
                    == .encodingFailed)
            // The connection is unaffected.
            #expect(try await client.query("SELECT 1").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test func byteaRoundTripsAllByteValues() async throws {
        try await withTestClient(poolSize: 1) { client in
            let bytes = (0...255).map(UInt8.init) + (0...255).reversed().map(UInt8.init)
            try await client.execute("CREATE TABLE blobs (id int PRIMARY KEY, data bytea)")
            try await client.execute(
                "INSERT INTO blobs VALUES (1, $1), (2, $2), (3, $3)",
                [bytes, Data(bytes), [UInt8]()])
            let rows = try await client.query("SELECT data, length(data) FROM blobs ORDER BY id")
            #expect(try rows[0].decode([UInt8].self, at: 0) == bytes)
            #expect(try rows[1].decode(Data.self, at: 0) == Data(bytes))
            #expect(try rows[0].decode(Int.self, at: 1) == 512)
            // Empty is not NULL.
            #expect(try rows[2].decode([UInt8]?.self, at: 0) == [])
        }
    }

    @Test func textArraysWithSpecialCharactersRoundTrip() async throws {
        let words = [
            "a,b", "say \"hi\"", "back\\slash", "", "NULL", "null", "{braces}", " spaced ", "🐦",
            "\\\"", "comma,\"quote\\",
        ]
        try await withTestClient(poolSize: 1) { client in
            let row = try #require(
                try await client.query(
                    "SELECT $1::text[], cardinality($1::text[]), $1::text[] @> ARRAY['NULL']",
                    [words]
                ).first)
            #expect(try row.decode([String].self, at: 0) == words)
            #expect(try row.decode(Int.self, at: 1) == words.count)
            #expect(try row.decode(Bool.self, at: 2))
            let empty = try #require(
                try await client.query("SELECT $1, $2", [[String](), [Int64]()]).first)
            #expect(try empty.decode([String].self, at: 0) == [])
            #expect(try empty.decode([Int64].self, at: 1) == [])
        }
    }

    @Test func arraysFromTheServerWithNullsAndBounds() async throws {
        try await withTestClient(poolSize: 1) { client in
            let row = try #require(
                try await client.query(
                    """
                    SELECT ARRAY['x', NULL, 'NULL'], ARRAY[1, NULL]::int8[], '[0:1]={5,6}'::int8[],
                           ARRAY[[1, 2], [3, 4]]::int8[], ARRAY['a"b', 'c\\d', 'e,f', '']
                    """
                ).first)
            // A NULL element has no [String] representation; the quoted "NULL" is a string.
            let nullElement = try #require(
                await postgresError { _ = try row.decode([String].self, at: 0) })
            #expect(nullElement.code == .decodingFailed)
            #expect(
                await postgresError { _ = try row.decode([Int64].self, at: 1) }?.code
                    == .decodingFailed)
            #expect(try row.decode([Int64].self, at: 2) == [5, 6])
            #expect(
                await postgresError { _ = try row.decode([Int64].self, at: 3) }?.code
                    == .decodingFailed)
            #expect(try row.decode([String].self, at: 4) == ["a\"b", "c\\d", "e,f", ""])
            let quotedNull = try #require(try await client.query("SELECT ARRAY['NULL', 'x']").first)
            #expect(try quotedNull.decode([String].self, at: 0) == ["NULL", "x"])
        }
    }

    @Test func int64ArraysWorkWithAny() async throws {
        try await withTestClient(poolSize: 1) { client in
            let ids: [Int64] = [3, 1, Int64.max, Int64.min]
            let rows = try await client.query(
                "SELECT n FROM unnest(ARRAY[1, 2, 3]::int8[]) AS n WHERE n = ANY($1) ORDER BY n",
                [ids])
            #expect(try rows.map { try $0.decode(Int64.self, at: 0) } == [1, 3])
            #expect(
                try await client.query("SELECT $1", [ids]).first?.decode([Int64].self, at: 0) == ids
            )
        }
    }

    @Test func doublesRoundTripExactly() async throws {
        let values: [Double] = [
            0, -0.0, 0.1, 1e300, -1e-300, .pi, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
            .infinity, -.infinity,
        ]
        try await withTestClient(poolSize: 1) { client in
            for value in [values, [.nan]].joined() {
                let row = try #require(try await client.query("SELECT $1", [value]).first)
                let decoded = try row.decode(Double.self, at: 0)
                #expect(decoded == value || (decoded.isNaN && value.isNaN))
                #expect(decoded.sign == value.sign)
            }
        }
    }

    @Test func datesRoundTripWithMillisecondPrecision() async throws {
        let dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1.001),
            Date(timeIntervalSince1970: 1_714_972_089.999),
            Date(timeIntervalSince1970: -62_135_596_800),
            Date(timeIntervalSince1970: 253_402_300_799.5),
            Date(timeIntervalSince1970: -63_517_780_800.25),
        ]
        try await withTestClient(poolSize: 1) { client in
            for date in dates {
                let row = try #require(
                    try await client.query("SELECT $1, extract(epoch FROM $1)::float8", [date])
                        .first)
                #expect(try row.decode(Date.self, at: 0) == date)
                #expect(
                    abs(try row.decode(Double.self, at: 1) - date.timeIntervalSince1970) < 0.0005)
            }
            // Sub-millisecond digits are rounded to the nearest millisecond.
            let precise = Date(timeIntervalSince1970: 10.0004)
            #expect(
                try await client.query("SELECT $1", [precise]).first?.decode(Date.self, at: 0)
                    == Date(timeIntervalSince1970: 10))
        }
    }
}
