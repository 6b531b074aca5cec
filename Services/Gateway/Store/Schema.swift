import Postgres

/// The gateway's own tables (schema `gateway`): the DeathStarBench adapter's accounts, and the
/// Mastodon API's apps, tokens, authorization codes and read markers.
enum GatewaySchema {
    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "dsb_users",
            sql: """
                -- DeathStarBench's users (integer ids its clients choose) and the Aviary accounts the
                -- adapter registered for them, with the refresh token it signs in with (it rotates).
                CREATE TABLE gateway.dsb_users (
                    dsb_id bigint PRIMARY KEY,
                    user_id bigint NOT NULL UNIQUE,
                    username text NOT NULL UNIQUE,
                    refresh_token text NOT NULL
                );
                """),
        PostgresMigration(
            version: 2, name: "mastodon_oauth",
            sql: """
                -- Apps registered through the Mastodon API (POST /api/v1/apps); the secret is kept as
                -- its SHA-256 only.
                CREATE TABLE gateway.mastodon_apps (
                    id bigserial PRIMARY KEY,
                    client_id text NOT NULL UNIQUE,
                    secret_hash text NOT NULL,
                    name text NOT NULL,
                    website text,
                    redirect_uris text NOT NULL,
                    scopes text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                -- The Mastodon tokens handed out (their SHA-256 only) and the Aviary session each one
                -- stands for: the gateway renews its access token with its refresh token (which rotates)
                -- so that the Mastodon token lives as long as the session. user_id and the session are
                -- null for an app's own token (client_credentials).
                CREATE TABLE gateway.mastodon_tokens (
                    token_hash text PRIMARY KEY,
                    refresh_hash text UNIQUE,
                    app_id bigint NOT NULL REFERENCES gateway.mastodon_apps ON DELETE CASCADE,
                    user_id bigint,
                    scopes text NOT NULL,
                    access_token text,
                    access_expires timestamptz,
                    refresh_token text,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                -- Authorization codes: single use, short-lived, holding the session their sign-in
                -- started until the app exchanges them (with the PKCE verifier when it sent a challenge).
                CREATE TABLE gateway.mastodon_codes (
                    code_hash text PRIMARY KEY,
                    app_id bigint NOT NULL REFERENCES gateway.mastodon_apps ON DELETE CASCADE,
                    redirect_uri text NOT NULL,
                    scopes text NOT NULL,
                    code_challenge text,
                    user_id bigint NOT NULL,
                    access_token text NOT NULL,
                    access_expires timestamptz NOT NULL,
                    refresh_token text NOT NULL,
                    expires_at timestamptz NOT NULL
                );
                """),
        PostgresMigration(
            version: 3, name: "mastodon_markers",
            sql: """
                -- Where a user stopped reading their home timeline and notifications (Mastodon's
                -- /api/v1/markers); version counts the updates.
                CREATE TABLE gateway.markers (
                    user_id bigint NOT NULL,
                    timeline text NOT NULL CHECK (timeline IN ('home', 'notifications')),
                    last_read_id bigint NOT NULL,
                    version bigint NOT NULL DEFAULT 0,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (user_id, timeline)
                );
                """),
    ]
}
