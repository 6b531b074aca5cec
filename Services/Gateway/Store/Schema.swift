import Postgres

/// The gateway's own tables (schema `gateway`): only the DeathStarBench adapter keeps anything.
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
                """)
    ]
}
