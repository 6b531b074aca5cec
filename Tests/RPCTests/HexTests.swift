import ChannelSupport
import Testing

@Suite("Bytes as hex")
struct HexTests {
    @Test func writesTwoLowercaseDigitsAByte() {
        #expect([UInt8]().hexEncoded == "")
        #expect([0x00, 0x0F, 0xA0, 0xFF].hexEncoded == "000fa0ff")
    }
}
