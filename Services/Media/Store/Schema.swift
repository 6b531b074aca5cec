import Postgres

/// The tables of the `media` schema, oldest migration first.
enum MediaSchema {
    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "uploads",
            sql: """
                -- An upload in progress; its chunks' bytes are in storage, its chunks' receipts below.
                CREATE TABLE media.uploads (
                    id bigint PRIMARY KEY,
                    owner_id bigint NOT NULL,
                    purpose text NOT NULL CHECK (purpose IN ('avatar', 'tweet', 'message')),
                    conversation_id bigint,
                    content_type text NOT NULL,
                    byte_size bigint NOT NULL CHECK (byte_size > 0),
                    declared_sha256 text,
                    chunk_bytes integer NOT NULL CHECK (chunk_bytes > 0),
                    received bigint NOT NULL DEFAULT 0,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL
                );
                CREATE INDEX uploads_expiry ON media.uploads (expires_at);
                -- One row per chunk received (chunk = offset / chunk_bytes), so retries count once.
                CREATE TABLE media.upload_chunks (
                    upload_id bigint NOT NULL REFERENCES media.uploads ON DELETE CASCADE,
                    chunk integer NOT NULL,
                    length integer NOT NULL,
                    PRIMARY KEY (upload_id, chunk)
                );
                """),
        PostgresMigration(
            version: 2, name: "items",
            sql: """
                -- Finished media; the id is the upload's. Content lives in storage under sha256.
                CREATE TABLE media.items (
                    id bigint PRIMARY KEY,
                    owner_id bigint NOT NULL,
                    purpose text NOT NULL CHECK (purpose IN ('avatar', 'tweet', 'message')),
                    conversation_id bigint,
                    content_type text NOT NULL,
                    byte_size bigint NOT NULL,
                    sha256 text NOT NULL,
                    width integer,
                    height integer,
                    duration_ms bigint,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                """),
        PostgresMigration(
            version: 3, name: "uploads by owner",
            sql: "CREATE INDEX uploads_owner ON media.uploads (owner_id, expires_at)"),
        PostgresMigration(
            version: 4, name: "stored content of uploads",
            sql: """
                -- Set by a finish before it moves the part to its content's name: a finish retried after
                -- a crash between that move and the recording of the medium finishes from the content.
                ALTER TABLE media.uploads ADD COLUMN stored_sha256 text;
                """),
        PostgresMigration(
            version: 5, name: "media by owner and content",
            sql: """
                -- A deleted account's media (MediaStore.erase), and whether any medium still holds some content.
                CREATE INDEX items_owner ON media.items (owner_id);
                CREATE INDEX items_sha256 ON media.items (sha256);
                -- Data exports: ZIPs auth uploads for their owner, served once.
                ALTER TABLE media.uploads DROP CONSTRAINT uploads_purpose_check,
                    ADD CONSTRAINT uploads_purpose_check CHECK (purpose IN ('avatar', 'tweet', 'message', 'export'));
                ALTER TABLE media.items DROP CONSTRAINT items_purpose_check,
                    ADD CONSTRAINT items_purpose_check CHECK (purpose IN ('avatar', 'tweet', 'message', 'export'));
                """),
        PostgresMigration(
            version: 6, name: "descriptions and focal points",
            sql: """
                -- Alt text and the point kept in view when cropped (media.describe).
                ALTER TABLE media.items ADD COLUMN description text, ADD COLUMN focus_x float8, ADD COLUMN focus_y float8;
                """),
    ]
}
