import EventStreams
import Postgres

/// The tables of the `notifications` schema, oldest migration first.
enum NotificationSchema {
    static let name = "notifications"

    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "notifications",
            sql: """
                CREATE TABLE notifications.notifications (
                    id bigint PRIMARY KEY,
                    recipient_id bigint NOT NULL,
                    type text NOT NULL CHECK (type IN ('follow', 'like', 'reply', 'mention', 'message')),
                    actor_id bigint NOT NULL,
                    tweet_id bigint,
                    conversation_id bigint,
                    -- What makes the notification unique for its recipient (NotificationKey): a retried
                    -- event finds it taken; an unlike or unfollow deletes it by it. "C" for prefix scans.
                    key text COLLATE "C" NOT NULL,
                    created_at timestamptz NOT NULL,
                    read boolean NOT NULL DEFAULT false,
                    CHECK (recipient_id <> actor_id),
                    UNIQUE (recipient_id, key)
                );
                -- Pages newest first, and catch-ups after a last seen id.
                CREATE INDEX notifications_recipient_recent ON notifications.notifications (recipient_id, id DESC);
                -- Unread counts and mark-read touch only the unread rows.
                CREATE INDEX notifications_unread ON notifications.notifications (recipient_id, id) WHERE NOT read;

                -- The events already applied (DeliveredEvent.deduplicationKey), so that one delivered
                -- again (a consumer that crashed before acknowledging) changes nothing, even after a
                -- later event withdrew what it made.
                CREATE TABLE notifications.consumed_events (
                    key text PRIMARY KEY,
                    consumed_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX consumed_events_age ON notifications.consumed_events (consumed_at);
                """),
        PostgresMigration(
            version: 2, name: "repost and quote notifications",
            sql: """
                ALTER TABLE notifications.notifications DROP CONSTRAINT notifications_type_check,
                    ADD CONSTRAINT notifications_type_check
                    CHECK (type IN ('follow', 'like', 'reply', 'mention', 'message', 'repost', 'quote'));
                """),
        PostgresMigration(
            version: 3, name: "notifications by actor",
            sql: """
                -- What a deleted account made for others (NotificationStore.erase).
                CREATE INDEX notifications_actor ON notifications.notifications (actor_id);
                """),
        PostgresMigration(
            version: 4, name: "web push",
            sql: """
                -- One Web Push subscription per session (PushStore).
                CREATE TABLE notifications.push_subscriptions (
                    id bigint PRIMARY KEY,
                    user_id bigint NOT NULL,
                    session_id bigint NOT NULL UNIQUE,
                    endpoint text NOT NULL,
                    p256dh text NOT NULL,
                    auth text NOT NULL,
                    kinds text[] NOT NULL,
                    policy text NOT NULL CHECK (policy IN ('all', 'followed', 'follower', 'none')),
                    standard boolean NOT NULL,
                    client_token text,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX push_subscriptions_user ON notifications.push_subscriptions (user_id);
                -- Pushes to send, written with the notification they tell of (PushDelivery).
                CREATE TABLE notifications.push_queue (
                    id bigserial PRIMARY KEY,
                    subscription_id bigint NOT NULL REFERENCES notifications.push_subscriptions ON DELETE CASCADE,
                    notification_id bigint NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    due_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX push_queue_due ON notifications.push_queue (due_at);
                -- The server's VAPID key, made by the first instance that needs one.
                CREATE TABLE notifications.push_key (
                    only_one boolean PRIMARY KEY DEFAULT true CHECK (only_one),
                    private_key text NOT NULL
                );
                """),
    ]
}
