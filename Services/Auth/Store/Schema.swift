import EventStreams
import Postgres

/// The tables of the `auth` schema: accounts, their external sign-in identities, and sessions.
enum AuthSchema {
    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "users",
            sql: """
                CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
                CREATE TABLE auth.users (
                    id bigint PRIMARY KEY,
                    email text NOT NULL,
                    username text NOT NULL CHECK (username = lower(username)),
                    fullname text NOT NULL,
                    bio text NOT NULL DEFAULT '',
                    profile_image_id bigint,
                    password_hash text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE UNIQUE INDEX users_email_key ON auth.users (lower(email));
                CREATE UNIQUE INDEX users_username_key ON auth.users (username);
                CREATE INDEX users_username_trgm ON auth.users USING gin (username public.gin_trgm_ops);
                CREATE INDEX users_fullname_trgm ON auth.users USING gin (lower(fullname) public.gin_trgm_ops);
                """),
        PostgresMigration(
            version: 2, name: "identities",
            sql: """
                CREATE TABLE auth.identities (
                    provider text NOT NULL,
                    subject text NOT NULL,
                    user_id bigint NOT NULL REFERENCES auth.users (id),
                    email text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (provider, subject)
                );
                CREATE INDEX identities_user_id ON auth.identities (user_id);
                """),
        PostgresMigration(
            version: 3, name: "sessions",
            sql: """
                CREATE TABLE auth.sessions (
                    id bigint PRIMARY KEY,
                    user_id bigint NOT NULL REFERENCES auth.users (id),
                    refresh_hash bytea NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    last_used_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz
                );
                CREATE UNIQUE INDEX sessions_refresh_hash ON auth.sessions (refresh_hash);
                CREATE INDEX sessions_user_id ON auth.sessions (user_id) WHERE revoked_at IS NULL;
                -- Refresh tokens already exchanged: presenting one again means it was stolen, and
                -- ends its session.
                CREATE TABLE auth.spent_refresh_tokens (
                    refresh_hash bytea PRIMARY KEY,
                    session_id bigint NOT NULL REFERENCES auth.sessions (id) ON DELETE CASCADE,
                    spent_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX spent_refresh_tokens_session_id ON auth.spent_refresh_tokens (session_id);
                """),
        Outbox.migration(schema: "auth", version: 4),
        PostgresMigration(
            version: 5, name: "ended sessions",
            sql: """
                -- What the hourly sweep of ended sessions looks for, without reading the whole table.
                CREATE INDEX sessions_revoked_at ON auth.sessions (revoked_at) WHERE revoked_at IS NOT NULL;
                CREATE INDEX sessions_last_used_at ON auth.sessions (last_used_at);
                """),
        PostgresMigration(
            version: 6, name: "long-spent refresh tokens",
            sql: """
                -- What the sweep of refresh tokens spent long ago looks for (a session that refreshes
                -- every few minutes for a year spends some 35,000).
                CREATE INDEX spent_refresh_tokens_spent_at ON auth.spent_refresh_tokens (spent_at);
                """),
        PostgresMigration(
            version: 7, name: "moderation",
            sql: """
                -- Admins (given by `aviary admin grant`) read reports and suspend accounts.
                ALTER TABLE auth.users
                    ADD COLUMN role text NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'admin')),
                    ADD COLUMN suspended_at timestamptz,
                    ADD COLUMN suspension_reason text;
                -- A report keeps the reported tweets and messages as they were (JSON arrays of Tweets and Messages).
                CREATE TABLE auth.reports (
                    id bigint PRIMARY KEY,
                    reporter_id bigint NOT NULL,
                    user_id bigint NOT NULL,
                    reason text NOT NULL CHECK (reason IN ('spam', 'legal', 'violation', 'other')),
                    comment text NOT NULL,
                    tweets jsonb NOT NULL,
                    messages jsonb NOT NULL DEFAULT '[]',
                    created_at timestamptz NOT NULL DEFAULT now(),
                    resolved_at timestamptz,
                    resolved_by bigint
                );
                CREATE INDEX reports_open ON auth.reports (id DESC) WHERE resolved_at IS NULL;
                CREATE INDEX reports_resolved ON auth.reports (id DESC) WHERE resolved_at IS NOT NULL;
                CREATE INDEX reports_reporter_created ON auth.reports (reporter_id, created_at);
                """),
        PostgresMigration(
            version: 8, name: "email verification and password reset",
            sql: """
                ALTER TABLE auth.users ADD COLUMN email_verified_at timestamptz;
                -- Single-use tokens sent by mail, by their SHA-256: a copy of the table holds none anyone
                -- could present. A new token of a purpose ends the account's earlier ones.
                CREATE TABLE auth.email_tokens (
                    token_hash bytea PRIMARY KEY,
                    user_id bigint NOT NULL REFERENCES auth.users (id),
                    purpose text NOT NULL CHECK (purpose IN ('verify', 'reset')),
                    email text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL,
                    used_at timestamptz
                );
                CREATE INDEX email_tokens_open ON auth.email_tokens (user_id, purpose) WHERE used_at IS NULL;
                CREATE INDEX email_tokens_expires_at ON auth.email_tokens (expires_at);
                -- Mail written with what asks for it, in the same statement, and deleted once an SMTP
                -- server took it (MailQueue): a crash loses none, and no request waits for SMTP.
                CREATE TABLE auth.mail_outbox (
                    id bigint PRIMARY KEY,
                    recipient text NOT NULL,
                    subject text NOT NULL,
                    body text NOT NULL,
                    attempts int NOT NULL DEFAULT 0,
                    next_attempt_at timestamptz NOT NULL DEFAULT now(),
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX mail_outbox_due ON auth.mail_outbox (next_attempt_at);
                """),
        PostgresMigration(
            version: 9, name: "deleted accounts",
            sql: """
                -- A deleted account keeps its row, emptied, until the sweep deletes it 30 days later:
                -- meanwhile its username stays taken, so nobody passes for its owner at once.
                ALTER TABLE auth.users ADD COLUMN deleted_at timestamptz;
                CREATE INDEX users_deleted_at ON auth.users (deleted_at) WHERE deleted_at IS NOT NULL;
                """),
        PostgresMigration(
            version: 10, name: "data exports",
            sql: """
                -- A user's copy of their data (DataExporter): prepared in the background, then kept
                -- by media (media_id) until its one download.
                CREATE TABLE auth.exports (
                    id bigint PRIMARY KEY,
                    user_id bigint NOT NULL,
                    status text NOT NULL DEFAULT 'preparing' CHECK (status IN ('preparing', 'ready', 'downloaded', 'failed')),
                    media_id bigint,
                    byte_size bigint,
                    attempts int NOT NULL DEFAULT 0,
                    -- Set while an instance prepares it: another takes it over once this is old.
                    started_at timestamptz,
                    error text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    ready_at timestamptz
                );
                CREATE INDEX exports_user ON auth.exports (user_id, id DESC);
                CREATE INDEX exports_preparing ON auth.exports (id) WHERE status = 'preparing';
                """),
        PostgresMigration(
            version: 11, name: "expired data exports",
            sql: """
                -- An export left ready for DataExportStore.retention is deleted from media.
                ALTER TABLE auth.exports DROP CONSTRAINT exports_status_check,
                    ADD CONSTRAINT exports_status_check
                        CHECK (status IN ('preparing', 'ready', 'downloaded', 'failed', 'expired'));
                CREATE INDEX exports_ready ON auth.exports (ready_at) WHERE status = 'ready';
                """),
    ]
}
