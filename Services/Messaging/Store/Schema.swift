import EventStreams
import Postgres

/// The tables of the `messaging` schema, oldest migration first.
///
/// Every conversation numbers its messages 1, 2, 3… (`seq`, handed out under the conversation's
/// row lock), so history pages, read markers and unread counts work on that one order: a
/// member's unread count is `last_seq - read_seq`, with no counting of rows.
enum MessagingSchema {
    static let name = "messaging"

    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "conversations",
            sql: """
                CREATE TABLE messaging.conversations (
                    id bigint PRIMARY KEY,
                    kind text NOT NULL CHECK (kind IN ('direct', 'group')),
                    title text,
                    -- A direct conversation's two members, lower id first: one conversation per pair.
                    direct_low bigint,
                    direct_high bigint,
                    created_by bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    -- A time-ordered id of the last change (message, rename, members), for the list order.
                    activity_id bigint NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    last_seq bigint NOT NULL DEFAULT 0,
                    last_message_id bigint,
                    UNIQUE (direct_low, direct_high),
                    CHECK ((kind = 'direct') = (direct_low IS NOT NULL AND direct_high IS NOT NULL))
                );
                CREATE TABLE messaging.members (
                    conversation_id bigint NOT NULL REFERENCES messaging.conversations (id),
                    user_id bigint NOT NULL,
                    joined_at timestamptz NOT NULL DEFAULT now(),
                    left_at timestamptz,
                    -- The read marker: the last message read, and its place in the conversation.
                    read_message_id bigint NOT NULL DEFAULT 0,
                    read_seq bigint NOT NULL DEFAULT 0,
                    PRIMARY KEY (conversation_id, user_id)
                );
                -- A user's current conversations.
                CREATE INDEX members_user_current ON messaging.members (user_id, conversation_id) WHERE left_at IS NULL;
                CREATE TABLE messaging.messages (
                    id bigint PRIMARY KEY,
                    conversation_id bigint NOT NULL REFERENCES messaging.conversations (id),
                    seq bigint NOT NULL,
                    sender_id bigint NOT NULL,
                    text text,
                    media jsonb,
                    kind text NOT NULL CHECK (kind IN ('text', 'image', 'video')),
                    client_message_id text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    UNIQUE (conversation_id, seq)
                );
                CREATE UNIQUE INDEX messages_client_id ON messaging.messages (conversation_id, sender_id, client_message_id)
                    WHERE client_message_id IS NOT NULL;
                -- When each user was last seen, written as they go offline.
                CREATE TABLE messaging.presence (
                    user_id bigint PRIMARY KEY,
                    last_seen timestamptz NOT NULL
                );
                """),
        Outbox.migration(schema: name, version: 2),
        PostgresMigration(
            version: 3, name: "send without per-statement constraint checks",
            sql: """
                -- PostgreSQL prepares a table's CHECK expressions and queues its foreign-key triggers
                -- again at every statement that writes it, and a send writes the conversation, the
                -- message and the sender's read marker. The constraints proved nothing the send does
                -- not: a message is inserted only from the row of its conversation that the same
                -- statement updates, members only in the statements that create or lock their
                -- conversation, no conversation is ever deleted, and the kinds come from the service's
                -- own enums. Without them a send's statement takes about a third less time in the
                -- database (mean 156-163 us -> 102-105 us at 1,000 sends/s).
                ALTER TABLE messaging.messages DROP CONSTRAINT messages_conversation_id_fkey, DROP CONSTRAINT messages_kind_check;
                ALTER TABLE messaging.members DROP CONSTRAINT members_conversation_id_fkey;
                ALTER TABLE messaging.conversations DROP CONSTRAINT conversations_check, DROP CONSTRAINT conversations_kind_check;
                """),
        PostgresMigration(
            version: 4, name: "members who took part",
            sql: """
                -- Whether the member made the conversation, sent in it or read it: only then do the
                -- others see their presence. Being put in one (a stranger's openDirect, a group)
                -- shows nothing. Existing members count as having taken part when they made the
                -- conversation or sent in it.
                ALTER TABLE messaging.members ADD COLUMN took_part boolean NOT NULL DEFAULT false;
                UPDATE messaging.members m SET took_part = true
                FROM messaging.conversations c
                WHERE c.id = m.conversation_id AND (c.created_by = m.user_id OR EXISTS (
                    SELECT FROM messaging.messages x WHERE x.conversation_id = m.conversation_id AND x.sender_id = m.user_id));
                """),
        PostgresMigration(
            version: 5, name: "muted conversations",
            sql: """
                -- A member who muted the conversation is not notified of its messages (messaging.mute);
                -- their unread count is kept as ever.
                ALTER TABLE messaging.members ADD COLUMN muted boolean NOT NULL DEFAULT false;
                """),
        PostgresMigration(
            version: 6, name: "edits, deletes, reactions and replies",
            sql: """
                -- reactions maps each member who reacted (their id as text) to their one emoji: a
                -- group has at most 256 members, and the message's row comes with them.
                ALTER TABLE messaging.messages
                    ADD COLUMN edited_at timestamptz,
                    ADD COLUMN deleted_at timestamptz,
                    ADD COLUMN reactions jsonb NOT NULL DEFAULT '{}',
                    ADD COLUMN reply_to bigint;
                -- Messages a member deleted for themselves only.
                CREATE TABLE messaging.hidden_messages (
                    user_id bigint NOT NULL,
                    message_id bigint NOT NULL,
                    PRIMARY KEY (user_id, message_id)
                );
                """),
        PostgresMigration(
            version: 7, name: "group roles, pictures and system messages",
            sql: """
                ALTER TABLE messaging.members ADD COLUMN role text NOT NULL DEFAULT 'member';
                ALTER TABLE messaging.conversations ADD COLUMN picture jsonb;
                -- A system message (kind system) records a change to its group: {change, actorId, userIds, …}.
                ALTER TABLE messaging.messages ADD COLUMN system jsonb;
                -- They are not unread: unread counts take away those after the reader's marker.
                CREATE INDEX messages_system ON messaging.messages (conversation_id, seq) WHERE kind = 'system';
                -- Each group's owner: its creator while a member, else whoever joined first.
                UPDATE messaging.members m SET role = 'owner'
                FROM (
                    SELECT DISTINCT ON (b.conversation_id) b.conversation_id, b.user_id
                    FROM messaging.members b JOIN messaging.conversations c ON c.id = b.conversation_id
                    WHERE c.kind = 'group' AND b.left_at IS NULL
                    ORDER BY b.conversation_id, b.user_id = c.created_by DESC, b.joined_at, b.user_id
                ) AS heir
                WHERE m.conversation_id = heir.conversation_id AND m.user_id = heir.user_id;
                """),
    ]
}
