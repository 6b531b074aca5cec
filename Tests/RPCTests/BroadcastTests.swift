import ChannelSupport
import Testing

@Suite("Broadcast")
struct BroadcastTests {
    @Test("every stream gets every value yielded after it was made, in order; finish ends them, and later ones at once")
    func fansOutAndFinishes() async {
        let broadcast = Broadcast<Int>()
        let first = broadcast.stream()
        broadcast.yield(1)
        let second = broadcast.stream()
        broadcast.yield(2)
        broadcast.yield(3)
        broadcast.finish()
        broadcast.yield(4)
        var seen: [[Int]] = []
        for stream in [first, second, broadcast.stream()] {
            var values: [Int] = []
            for await value in stream { values.append(value) }
            seen.append(values)
        }
        #expect(seen == [[1, 2, 3], [2, 3], []])
    }

    @Test("a reader that falls behind keeps what the buffering policy keeps")
    func buffersAsTold() async {
        let broadcast = Broadcast<Int>(bufferingPolicy: .bufferingNewest(2))
        let stream = broadcast.stream()
        for value in 1...5 { broadcast.yield(value) }
        broadcast.finish()
        var values: [Int] = []
        for await value in stream { values.append(value) }
        #expect(values == [4, 5])
    }
}
