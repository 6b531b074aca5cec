import EventStreams
import Postgres

/// The tables of the `social_graph` schema, oldest migration first.
enum GraphSchema {
    static let name = "social_graph"

    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "follows",
            sql: """
                CREATE TABLE social_graph.follows (
                    follower_id bigint NOT NULL,
                    followee_id bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (follower_id, followee_id),
                    CHECK (follower_id <> followee_id)
                );
                -- Followers newest first (lists, fan-out ids); covers the keyset pages as index-only scans.
                CREATE INDEX follows_followee_recent ON social_graph.follows (followee_id, created_at DESC, follower_id);
                -- Following newest first; the primary key serves lookups of one edge and friends of friends.
                CREATE INDEX follows_follower_recent ON social_graph.follows (follower_id, created_at DESC, followee_id);
                """),
        PostgresMigration(
            version: 2, name: "counts",
            sql: """
                CREATE TABLE social_graph.counts (
                    user_id bigint PRIMARY KEY,
                    followers bigint NOT NULL DEFAULT 0 CHECK (followers >= 0),
                    following bigint NOT NULL DEFAULT 0 CHECK (following >= 0)
                )
                """),
        Outbox.migration(schema: name, version: 3),
        PostgresMigration(
            version: 4, name: "count deltas",
            sql: """
                -- Each follow and unfollow appends its +1/-1 here instead of updating two counts rows,
                -- which serialized every follow of a popular user; CountCompactor folds them into counts.
                CREATE TABLE social_graph.count_deltas (
                    id bigserial PRIMARY KEY,
                    user_id bigint NOT NULL,
                    followers bigint NOT NULL,
                    following bigint NOT NULL
                );
                CREATE INDEX count_deltas_user ON social_graph.count_deltas (user_id);
                """),
        PostgresMigration(
            version: 5, name: "blocks",
            sql: """
                CREATE TABLE social_graph.blocks (
                    blocker_id bigint NOT NULL,
                    blocked_id bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (blocker_id, blocked_id),
                    CHECK (blocker_id <> blocked_id)
                );
                -- The caller's blocks newest first (graph.blocks), as index-only scans.
                CREATE INDEX blocks_blocker_recent ON social_graph.blocks (blocker_id, created_at DESC, blocked_id);
                -- Who blocked a user: the other half of "either blocked the other".
                CREATE INDEX blocks_blocked ON social_graph.blocks (blocked_id, blocker_id);
                """),
        PostgresMigration(
            version: 6, name: "mutes",
            sql: """
                CREATE TABLE social_graph.mutes (
                    muter_id bigint NOT NULL,
                    muted_id bigint NOT NULL,
                    -- Whether the muted user's actions notify the muter no more.
                    notifications boolean NOT NULL,
                    -- When the mute ends by itself (MuteStore.expire); null for never.
                    until timestamptz,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (muter_id, muted_id),
                    CHECK (muter_id <> muted_id)
                );
                -- The caller's mutes newest first (graph.mutes), as index-only scans.
                CREATE INDEX mutes_muter_recent ON social_graph.mutes (muter_id, created_at DESC, muted_id);
                CREATE INDEX mutes_until ON social_graph.mutes (until) WHERE until IS NOT NULL;
                """),
        PostgresMigration(
            version: 7, name: "lists",
            sql: """
                CREATE TABLE social_graph.lists (
                    id bigint PRIMARY KEY,
                    owner_id bigint NOT NULL,
                    title text NOT NULL,
                    replies_policy text NOT NULL CHECK (replies_policy IN ('followed', 'list', 'none')),
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX lists_owner ON social_graph.lists (owner_id, id);
                CREATE TABLE social_graph.list_members (
                    list_id bigint NOT NULL REFERENCES social_graph.lists ON DELETE CASCADE,
                    member_id bigint NOT NULL,
                    -- The list's owner again: an unfollow takes the followee off the follower's
                    -- lists by it (FollowStore.deletion).
                    owner_id bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (list_id, member_id)
                );
                -- A list's members newest first (graph.listMembers), as index-only scans.
                CREATE INDEX list_members_recent ON social_graph.list_members (list_id, created_at DESC, member_id);
                CREATE INDEX list_members_owner ON social_graph.list_members (owner_id, member_id);
                CREATE INDEX list_members_member ON social_graph.list_members (member_id);
                """),
        PostgresMigration(
            version: 8, name: "block rechecks",
            sql: """
                -- Blocks whose pair is looked at again once every follow statement that began before
                -- the block could have ended (BlockStore.recheck): such a follow read no block.
                CREATE TABLE social_graph.block_rechecks (
                    blocker_id bigint NOT NULL,
                    blocked_id bigint NOT NULL,
                    due_at timestamptz NOT NULL,
                    PRIMARY KEY (blocker_id, blocked_id)
                );
                CREATE INDEX block_rechecks_due ON social_graph.block_rechecks (due_at);
                """),
    ]
}
