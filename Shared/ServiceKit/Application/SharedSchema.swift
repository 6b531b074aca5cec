import Postgres

/// The tables all services share (schema `aviary_shared`), migrated by each at start-up before its own.
enum SharedSchema {
    static let migrator = PostgresMigrator(
        schema: "aviary_shared",
        migrations: [
            PostgresMigration(
                version: 1, name: "secrets",
                sql: """
                    CREATE TABLE aviary_shared.secrets (
                        name text PRIMARY KEY,
                        value text NOT NULL,
                        created_at timestamptz NOT NULL DEFAULT now()
                    )
                    """),
            PostgresMigration(
                version: 2, name: "node leases",
                sql: """
                    CREATE TABLE aviary_shared.node_leases (
                        node_id integer PRIMARY KEY CHECK (node_id BETWEEN 0 AND 1023),
                        holder text NOT NULL,
                        acquired_at timestamptz NOT NULL DEFAULT now(),
                        expires_at timestamptz NOT NULL
                    )
                    """),
        ])
}
