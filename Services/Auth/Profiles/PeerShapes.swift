import AviaryAPI

// The batch methods of social-graph and tweets that profile reads use (contract §3, internal).

/// `graph.statsMany` params (with `viewerId`, the relations come too), and `tweets.statsMany`
/// params (without).
struct GraphStatsManyParams: Encodable, Sendable {
    var ids: [EntityID]
    var viewerId: EntityID?
}

/// One element of the `graph.statsMany` result; the relation when a viewer was named.
struct GraphUserStats: Decodable, Sendable {
    var userId: EntityID
    var followers: Int64
    var following: Int64
    var isFollowed: Bool?
    var followsYou: Bool?
}

/// `graph.relationships` params.
struct GraphRelationshipsParams: Encodable, Sendable {
    var viewerId: EntityID
    var ids: [EntityID]
}

/// One element of the `graph.relationships` result: the viewer's relation to `userId`.
struct GraphRelation: Decodable, Sendable {
    var userId: EntityID
    var isFollowed: Bool
    var followsYou: Bool
}

/// One element of the `tweets.statsMany` result.
struct TweetCount: Decodable, Sendable {
    var userId: EntityID
    var tweets: Int64
}
