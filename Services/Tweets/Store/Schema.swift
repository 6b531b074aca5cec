import EventStreams
import Postgres

/// The tables of the `tweets` schema, oldest migration first.
enum TweetSchema {
    static let name = "tweets"

    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "tweets",
            sql: """
                CREATE TABLE tweets.tweets (
                    id bigint PRIMARY KEY,
                    author_id bigint NOT NULL,
                    -- NULL once deleted: the row stays so that replies and likes still point somewhere.
                    text text,
                    reply_to bigint,
                    reply_to_user_id bigint,
                    mention_ids bigint[] NOT NULL DEFAULT '{}',
                    hashtags text[] NOT NULL DEFAULT '{}',
                    media_ids bigint[] NOT NULL DEFAULT '{}',
                    likes bigint NOT NULL DEFAULT 0 CHECK (likes >= 0),
                    replies bigint NOT NULL DEFAULT 0 CHECK (replies >= 0),
                    idempotency_key text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    deleted_at timestamptz,
                    search tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(text, ''))) STORED
                );
                CREATE UNIQUE INDEX tweets_idempotency ON tweets.tweets (author_id, idempotency_key)
                    WHERE idempotency_key IS NOT NULL;
                -- A user's live tweets newest first (byUser, recentIds, statsMany), and without replies.
                CREATE INDEX tweets_author_recent ON tweets.tweets (author_id, id DESC) WHERE deleted_at IS NULL;
                CREATE INDEX tweets_author_roots ON tweets.tweets (author_id, id DESC)
                    WHERE deleted_at IS NULL AND reply_to IS NULL;
                -- A thread oldest first.
                CREATE INDEX tweets_thread ON tweets.tweets (reply_to, id) WHERE reply_to IS NOT NULL AND deleted_at IS NULL;
                CREATE INDEX tweets_search ON tweets.tweets USING gin (search);
                CREATE INDEX tweets_hashtags ON tweets.tweets USING gin (hashtags);
                -- The tweets that show a user's summary, whose cached JSON a profile change makes stale.
                CREATE INDEX tweets_mentions ON tweets.tweets USING gin (mention_ids);
                CREATE INDEX tweets_reply_to_user ON tweets.tweets (reply_to_user_id) WHERE reply_to_user_id IS NOT NULL;
                """),
        PostgresMigration(
            version: 2, name: "likes",
            sql: """
                CREATE TABLE tweets.likes (
                    tweet_id bigint NOT NULL,
                    user_id bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tweet_id, user_id)
                );
                -- A user's likes, most recent first (likedBy).
                CREATE INDEX likes_user_recent ON tweets.likes (user_id, created_at DESC, tweet_id DESC);
                """),
        Outbox.migration(schema: name, version: 3),
        PostgresMigration(
            version: 4, name: "bookmarks",
            sql: """
                CREATE TABLE tweets.bookmarks (
                    user_id bigint NOT NULL,
                    tweet_id bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (user_id, tweet_id)
                );
                -- A user's bookmarks, most recent first (tweets.bookmarks).
                CREATE INDEX bookmarks_user_recent ON tweets.bookmarks (user_id, created_at DESC, tweet_id DESC);
                """),
        PostgresMigration(
            version: 5, name: "pinned tweets",
            sql: """
                -- The one tweet each user pinned on their profile (tweets.pin).
                CREATE TABLE tweets.pins (
                    user_id bigint PRIMARY KEY,
                    tweet_id bigint NOT NULL,
                    pinned_at timestamptz NOT NULL DEFAULT now()
                );
                """),
        PostgresMigration(
            version: 6, name: "reposts and quotes",
            sql: """
                -- A repost is a row of its reposter's, without text, whose repost_of names the original
                -- (never itself a repost): fan-out, rebuilds and user pages take it as any tweet, and
                -- reads show the original in its place. quote_of names the tweet a tweet quotes.
                ALTER TABLE tweets.tweets ADD COLUMN repost_of bigint, ADD COLUMN quote_of bigint,
                    ADD COLUMN reposts bigint NOT NULL DEFAULT 0 CHECK (reposts >= 0);
                -- One live repost per user and original (tweets.repost is idempotent), most recent
                -- first (tweets.reposters), and whether a viewer reposted a tweet.
                CREATE UNIQUE INDEX tweets_reposts ON tweets.tweets (repost_of, author_id)
                    WHERE repost_of IS NOT NULL AND deleted_at IS NULL;
                CREATE INDEX tweets_reposts_recent ON tweets.tweets (repost_of, id DESC)
                    WHERE repost_of IS NOT NULL AND deleted_at IS NULL;
                """),
        PostgresMigration(
            version: 7, name: "latest tweets with media",
            sql: """
                -- tweets.latest with mediaOnly: few tweets carry media, so a read of the primary key
                -- backwards could pass many rows for each one it keeps.
                CREATE INDEX tweets_latest_media ON tweets.tweets (id DESC)
                    WHERE media_ids <> '{}' AND deleted_at IS NULL AND repost_of IS NULL;
                """),
    ]
}
