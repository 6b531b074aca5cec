import Hummingbird
import NIOCore

/// What the gateway's handlers know of a request besides the request: the socket's peer.
struct EdgeContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection's channel.
    let channel: any Channel

    /// The IP address of the socket's peer (a client, or a proxy in front of the gateway).
    var peer: String? { channel.remoteAddress?.ipAddress }

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
