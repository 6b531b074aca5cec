import AviaryAPI
import RPC

/// The wire form of an id page, `{"items": ["<id>", …], "nextCursor": "<cursor>" | null}`, written
/// by hand: fan-out reads pages of thousands of ids, and `JSONEncoder` took most of such a call.
/// Ids are digits and cursors base64url, so nothing needs escaping.
enum IDPageJSON {
    static func encode(_ page: FollowPage) -> RawJSON {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40 + page.userIDs.count * 22)
        bytes.append(contentsOf: #"{"items":["#.utf8)
        for (index, id) in page.userIDs.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: String(id).utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(contentsOf: #"],"nextCursor":"#.utf8)
        if let next = page.next {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: next.encoded.utf8)
            bytes.append(UInt8(ascii: "\""))
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }
}
