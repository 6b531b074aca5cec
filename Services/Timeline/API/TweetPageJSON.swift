import RPC

/// The page `{"items": [Tweet…], "nextCursor": …}` written around tweets as `tweets.getMany`
/// encoded them, so they are never decoded here.
struct TweetPageJSON {
    private var bytes: [UInt8] = Array(#"{"items":["#.utf8)
    private(set) var count = 0

    /// Makes room for about `bytes` more bytes of tweets, so appending does not reallocate.
    mutating func reserve(_ bytes: Int) {
        self.bytes.reserveCapacity(self.bytes.count + bytes + 64)
    }

    mutating func append(_ tweet: ArraySlice<UInt8>) {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: tweet)
        count += 1
    }

    /// The finished page; `next` is the id the following page starts before, nil on the last page.
    /// Consuming, so the page's bytes are extended in place rather than copied.
    consuming func finish(next: Int64?) -> RawJSON {
        bytes.append(contentsOf: #"],"nextCursor":"#.utf8)
        if let next {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: TimelineCursor.encode(next).utf8)
            bytes.append(UInt8(ascii: "\""))
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }
}
