import RPC

/// timeline's methods: the home and user timelines apps read.
public enum TimelineAPI {
    public static let home = RPCMethod<PageParams, Page<Tweet>>(
        "timeline.home", access: .user,
        summary: """
            Page of Tweets, newest first: the caller's own tweets and those of everyone they follow, fully hydrated \
            ({items: [Tweet], nextCursor}; limit default 20, at most 100). Deleted tweets never appear; a page may \
            hold fewer than limit items when some were just deleted.
            """)

    public static let user = RPCMethod<UserPageParams, Page<Tweet>>(
        "timeline.user", access: .anonymous,
        summary: """
            Page of userId's Tweets (replies included), newest first, fully hydrated ({items: [Tweet], nextCursor}; \
            limit default 20, at most 100); likedByMe is relative to the caller when a token is given. An unknown \
            user is not_found.
            """)

    public static let list = RPCMethod<ListPageParams, Page<Tweet>>(
        "timeline.list", access: .user,
        summary: """
            Page of the Tweets of the users on the caller's list listId, newest first, fully hydrated ({items: \
            [Tweet], nextCursor}; limit default 20, at most 100), replies as the list's repliesPolicy says. \
            not_found for another's list.
            """)
}
