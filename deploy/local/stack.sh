#!/usr/bin/env bash
# Runs the whole suite on this machine: Postgres, Redis, the seven services and the gateway.
#
#   deploy/local/stack.sh up       install what is missing, build, start everything, print addresses
#   deploy/local/stack.sh down     stop the services, then the Redis and Postgres that `up` started
#   deploy/local/stack.sh status   show what runs
#   deploy/local/stack.sh stop redis|postgres    stop only that server (the services stay up), and
#   deploy/local/stack.sh start redis|postgres   start it again: a dependency's outage, for
#                                                `aviary bench faults`
#
# Everything lives in .aviary-local/ in the repository: postgres/ (the cluster), redis/ (its data),
# logs/ (one log per program) and run/ (pid files). As root in a folder closed to the cluster's
# OS user, the cluster lives in /var/lib/aviary-local/<hash>, linked from postgres/.
#
# Environment:
#   AVIARY_POSTGRES_URL      use this Postgres instead of starting one
#   AVIARY_REDIS_URL         use this Redis instead of starting one
#   AVIARY_LOCAL_PG_PORT     port of the local Postgres (5432; the next free one when a server
#                            there is not one role aviary can use, such as Debian's own cluster)
#   AVIARY_LOCAL_REDIS_PORT  port of the local Redis (6379; the next free one when a server there
#                            keeps no append-only file, such as Debian's own)
#   AVIARY_BUILD             debug (default) or release
#   AVIARY_LOCAL_BIN         run the executables in this folder instead of building
#   AVIARY_LOCAL_TIMEOUT     seconds to wait for each service to be ready (60)
#   AVIARY_MEDIA_ROOT        where media keeps uploaded files (.aviary-local/media)
#   AVIARY_EVENT_LOOPS       event-loop threads of each service (a quarter of the cores, at least 1)
#   AVIARY_GATEWAY_PORT      the gateway's public HTTP/WebSocket port (8080; the next free one when
#                            another program has it)
#   AVIARY_SMTP_URL          hand auth's mail to this SMTP server instead of the local one, which
#                            listens on 127.0.0.1:2525 (or the next free port) and keeps each
#                            mail in .aviary-local/mail (a Maildir: new/ holds one file a mail)
#   AVIARY_LOCAL_PGBOUNCER   1: the services reach our Postgres through PgBouncer in transaction
#                            mode (127.0.0.1:6432 or the next free port, AVIARY_LOCAL_PGBOUNCER_POOL
#                            server connections, 20), with AVIARY_POSTGRES_PREPARED=off
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="$AVIARY_ROOT/.aviary-local"
LOGS="$STATE/logs"
RUN="$STATE/run"
PG_DIR="$STATE/postgres"
PG_LOG="$LOGS/postgres.log"
# A cluster kept outside the repository (see relocate_cluster_if_closed) is linked from there.
if [ -L "$PG_DIR" ]; then
    # -m: the folder may be gone (deleted by hand); then a cluster is made there again.
    PG_DIR="$(readlink -m "$PG_DIR")"
    PG_LOG="$PG_DIR/postgres.log"
fi
REDIS_DIR="$STATE/redis"
PG_PORT="${AVIARY_LOCAL_PG_PORT:-5432}"
REDIS_PORT="${AVIARY_LOCAL_REDIS_PORT:-6379}"
CONFIG="${AVIARY_BUILD:-debug}"

# The services (SERVICES, in lib.sh) listen on the contract's ports (§4): JSON-RPC 71xx, admin HTTP 72xx.
rpc_port() { contract_rpc_port "$1"; }
admin_port() { contract_admin_port "$1"; }

# The gateway's public port: the one it was started with (run/gateway.port), else the one it would get.
gateway_port() { cat "$RUN/gateway.port" 2>/dev/null || echo "${AVIARY_GATEWAY_PORT:-8080}"; }

# ---------------------------------------------------------------------------------------------
# Postgres: a cluster of our own in .aviary-local/postgres, run as a non-root OS user.

PG_BIN=""
BIN_SHOWN="" # BIN as the user would type it

# The OS user of our cluster is PG_USER (choose_pg_user, as_pg: lib.sh).

# Prints the pid of our postmaster when it runs.
postgres_pid() { postmaster_pid "$PG_DIR/data"; }

# The port our running postmaster listens on (line 4 of postmaster.pid).
postgres_port() { sed -n 4p "$PG_DIR/data/postmaster.pid"; }

# The URL of database $1 on our postmaster listening on port $2: through its Unix socket when it
# has one, else through 127.0.0.1.
our_postgres_url() {
    if [ -S "$PG_DIR/socket/.s.PGSQL.$2" ]; then
        echo "postgresql://aviary@/$1?host=$PG_DIR/socket&port=$2"
    else
        echo "postgres://aviary@127.0.0.1:$2/$1"
    fi
}

can_use_postgres() {
    "$PG_BIN/psql" -X -q -d "$1" -c 'SELECT 1' >/dev/null 2>&1
}

# When we are root and the repository lies in a folder closed to the cluster's OS user (a clone
# in /root), the cluster and its log live in /var/lib/aviary-local/<repository hash>/postgres
# instead, linked from .aviary-local/postgres (and logs/postgres.log).
relocate_cluster_if_closed() {
    mkdir -p "$STATE"
    closed_to_pg_user "$STATE" || return 0
    local elsewhere
    elsewhere="$(postgres_home_elsewhere postgres)"
    # A cluster left there by a folder since deleted belongs to nothing: start afresh.
    rm -rf "$elsewhere" "$STATE/postgres"
    mkdir -p "$elsewhere"
    ln -s "$elsewhere" "$STATE/postgres"
    PG_DIR="$elsewhere"
    PG_LOG="$PG_DIR/postgres.log"
    ln -sfn "$PG_LOG" "$LOGS/postgres.log"
    say "Postgres: $(short "$STATE") is closed to OS user $PG_USER, so the cluster lives in $elsewhere"
}

create_cluster() {
    relocate_cluster_if_closed
    local socket="$PG_DIR/socket"
    # A deep or oddly named checkout gets TCP only.
    socket_folder_usable "$socket" || socket=""
    mkdir -p "$PG_DIR/socket"
    if is_root; then chown "$PG_USER" "$PG_DIR" "$PG_DIR/socket"; fi
    chmod 700 "$PG_DIR"
    as_pg test -w "$PG_DIR" ||
        die "OS user $PG_USER cannot write $PG_DIR (is a parent folder closed to it?); set AVIARY_POSTGRES_URL to use another Postgres"
    say "Postgres: creating a cluster in $(short "$PG_DIR")/data (OS user $PG_USER, role aviary)"
    init_postgres_cluster "$PG_DIR/data" "$socket" "$LOGS/postgres-initdb.log"
}

start_postgres() {
    if [ -n "${AVIARY_POSTGRES_URL:-}" ]; then
        say "Postgres: using AVIARY_POSTGRES_URL ($AVIARY_POSTGRES_URL)"
        echo "$AVIARY_POSTGRES_URL" >"$RUN/postgres.url"
        return
    fi
    PG_BIN="$(postgres_bin)"
    local url="postgres://aviary@127.0.0.1:$PG_PORT/aviary" port="$PG_PORT" pid
    if pid="$(postgres_pid)"; then
        port="$(postgres_port)"
        url="$(our_postgres_url aviary "$port")"
        say "Postgres: ours already runs (pid $pid, $url)"
    elif port_in_use "$PG_PORT" && "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && can_use_postgres "$url"; then
        say "Postgres: reusing the server that already answers on port $PG_PORT (down leaves it alone)"
        echo "$url" >"$RUN/postgres.url"
        export AVIARY_POSTGRES_URL="$url"
        return
    else
        if port_in_use "$PG_PORT"; then
            # Installing postgresql on a machine with systemd starts Debian's own cluster there.
            local taken="$PG_PORT"
            PG_PORT="$(free_port_from $((PG_PORT + 1)))"
            port="$PG_PORT"
            say "Postgres: port $taken is taken by a server role aviary cannot use (Debian's cluster?); ours listens on $PG_PORT"
        fi
        choose_pg_user "$PG_DIR/data"
        [ -f "$PG_DIR/data/PG_VERSION" ] || create_cluster
        touch "$PG_LOG"
        if is_root; then chown "$PG_USER" "$PG_LOG"; fi
        as_pg "$PG_BIN/pg_ctl" start -D "$PG_DIR/data" -l "$PG_LOG" -w -t 60 \
            -o "-p $PG_PORT" >/dev/null || {
            tail -n 20 "$PG_LOG" >&2
            die "Postgres did not start, see $(short "$PG_LOG")"
        }
        say "Postgres: started on 127.0.0.1:$PG_PORT (pid $(postgres_pid))"
        url="$(our_postgres_url aviary "$PG_PORT")"
    fi
    local admin
    admin="$(our_postgres_url postgres "$port")"
    if [ "$("$PG_BIN/psql" -X -At -d "$admin" -c "SELECT 1 FROM pg_database WHERE datname = 'aviary'")" != 1 ]; then
        "$PG_BIN/psql" -X -q -d "$admin" -c 'CREATE DATABASE aviary'
        say "Postgres: created the database aviary"
    fi
    echo "$url" >"$RUN/postgres.url"
    export AVIARY_POSTGRES_URL="$url"
}

stop_postgres() {
    local pid
    pid="$(postgres_pid)" || return 0
    PG_BIN="$(postgres_bin)"
    PG_USER="$(stat -c %U "$PG_DIR/data")"
    as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DIR/data" -m fast -w -t 60 >/dev/null
    say "Postgres: stopped (pid $pid)"
}

# ---------------------------------------------------------------------------------------------
# PgBouncer (AVIARY_LOCAL_PGBOUNCER=1): transaction pooling in front of our Postgres (lib.sh).

# Beside the cluster, in a folder its OS user can use (see relocate_cluster_if_closed).
PGB_DIR="$PG_DIR/pgbouncer"

pgbouncer_pid() { live_pid "$RUN/pgbouncer.pid"; }

start_pgbouncer() {
    [ "${AVIARY_LOCAL_PGBOUNCER:-0}" = 1 ] || return 0
    local pid port pg_port pg_host
    if pid="$(pgbouncer_pid)"; then
        port="$(cat "$RUN/pgbouncer.port")"
        say "PgBouncer: ours already runs (pid $pid, port $port)"
    else
        pid="$(postgres_pid)" || die "AVIARY_LOCAL_PGBOUNCER=1 needs the Postgres this script starts (unset AVIARY_POSTGRES_URL)"
        pg_port="$(postgres_port)"
        pg_host=127.0.0.1
        [ -S "$PG_DIR/socket/.s.PGSQL.$pg_port" ] && pg_host="$PG_DIR/socket"
        port="$(free_port_from 6432)"
        PG_USER="$(stat -c %U "$PG_DIR/data")"
        write_pgbouncer_config "$PGB_DIR" "$pg_host" "$pg_port" "$port"
        ln -sfn "$PGB_DIR/pgbouncer.log" "$LOGS/pgbouncer.log"
        start_pgbouncer_daemon "$PGB_DIR" "$port"
        cp "$PGB_DIR/pgbouncer.pid" "$RUN/pgbouncer.pid"
        echo "$port" >"$RUN/pgbouncer.port"
        say "PgBouncer: started on 127.0.0.1:$port, transaction mode, in front of Postgres (pid $(pgbouncer_pid))"
    fi
    export AVIARY_POSTGRES_URL="postgres://aviary@127.0.0.1:$port/aviary" AVIARY_POSTGRES_PREPARED=off
}

stop_pgbouncer() {
    local pid
    pid="$(pgbouncer_pid)" || return 0
    end_process "$pid" INT 15
    rm -f "$RUN/pgbouncer.pid" "$RUN/pgbouncer.port"
    say "PgBouncer: stopped (pid $pid)"
}

# ---------------------------------------------------------------------------------------------
# Redis: a server of our own with its data in .aviary-local/redis (append-only file).

redis_pid() { live_pid "$RUN/redis.pid"; }

# Whether the Redis on port $1 keeps an append-only file, as the services' events need.
redis_keeps_writes() { [ "$(redis-cli -h 127.0.0.1 -p "$1" config get appendonly 2>/dev/null | tail -n 1)" = yes ]; }

start_redis() {
    if [ -n "${AVIARY_REDIS_URL:-}" ]; then
        say "Redis: using AVIARY_REDIS_URL ($AVIARY_REDIS_URL)"
        echo "$AVIARY_REDIS_URL" >"$RUN/redis.url"
        return
    fi
    local url="redis://127.0.0.1:$REDIS_PORT" pid
    if pid="$(redis_pid)"; then
        url="$(cat "$RUN/redis.url" 2>/dev/null || echo "$url")"
        say "Redis: ours already runs (pid $pid, $url)"
    elif port_in_use "$REDIS_PORT" && redis_answers "$REDIS_PORT" && redis_keeps_writes "$REDIS_PORT"; then
        say "Redis: reusing the server that already answers on port $REDIS_PORT (down leaves it alone)"
    else
        if port_in_use "$REDIS_PORT"; then
            # Installing redis-server on a machine with systemd starts Debian's own there, which
            # keeps no append-only file: a restart would lose the events waiting in it.
            local taken="$REDIS_PORT"
            REDIS_PORT="$(free_port_from $((REDIS_PORT + 1)))"
            url="redis://127.0.0.1:$REDIS_PORT"
            say "Redis: port $taken is taken by a server that is not one to use (no append-only file?); ours listens on $REDIS_PORT"
        fi
        mkdir -p "$REDIS_DIR"
        # Also on a Unix socket, which the services then use, as they do Postgres's.
        local socket=()
        if socket_folder_usable "$REDIS_DIR"; then
            socket=(--unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700)
            url="unix://$REDIS_DIR/redis.sock"
        fi
        redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$REDIS_DIR" --appendonly yes --save "" \
            "${socket[@]}" --daemonize yes --pidfile "$RUN/redis.pid" --logfile "$LOGS/redis.log"
        wait_for 15 redis_answers "$REDIS_PORT" || {
            tail -n 20 "$LOGS/redis.log" >&2
            die "Redis did not start, see $(short "$LOGS/redis.log")"
        }
        say "Redis: started on 127.0.0.1:$REDIS_PORT (pid $(redis_pid))"
    fi
    echo "$url" >"$RUN/redis.url"
    export AVIARY_REDIS_URL="$url"
}

stop_redis() {
    local pid
    pid="$(redis_pid)" || return 0
    end_process "$pid" TERM 15
    rm -f "$RUN/redis.pid"
    say "Redis: stopped (pid $pid)"
}

# ---------------------------------------------------------------------------------------------
# Mail: an SMTP server that keeps what auth sends (verification and password reset tokens) in a
# Maildir, where the developer reads it.

MAIL_DIR="$STATE/mail"

mail_pid() { live_pid "$RUN/smtp.pid" aiosmtpd; }

start_mail() {
    if [ -n "${AVIARY_SMTP_URL:-}" ]; then
        say "Mail: sent through AVIARY_SMTP_URL ($AVIARY_SMTP_URL)"
        return
    fi
    local pid port
    if pid="$(mail_pid)"; then
        port="$(cat "$RUN/smtp.port")"
        say "Mail: ours already runs (pid $pid, port $port)"
    else
        ensure_apt_packages python3-aiosmtpd
        port="$(free_port_from 2525)"
        # A Maildir: aiosmtpd makes its folders only where the whole path is missing.
        mkdir -p "$MAIL_DIR/new" "$MAIL_DIR/cur" "$MAIL_DIR/tmp"
        launch_service "$LOGS/smtp.log" stack.sh aiosmtpd -n -c aiosmtpd.handlers.Mailbox -l "127.0.0.1:$port" "$MAIL_DIR"
        echo "$LAUNCHED_PID" >"$RUN/smtp.pid"
        echo "$port" >"$RUN/smtp.port"
        wait_for 15 port_in_use "$port" || die "the SMTP server did not start, see $(short "$LOGS/smtp.log")"
        say "Mail: an SMTP server on 127.0.0.1:$port keeps auth's mail in $(short "$MAIL_DIR")/new"
    fi
    export AVIARY_SMTP_URL="smtp://127.0.0.1:$port"
}

stop_mail() {
    local pid
    pid="$(mail_pid)" || return 0
    end_process "$pid" TERM 15
    rm -f "$RUN/smtp.pid" "$RUN/smtp.port"
    say "Mail: stopped (pid $pid)"
}

# ---------------------------------------------------------------------------------------------
# The services.

BIN=""
BIN_SHOWN="" # BIN as the user would type it


build() {
    if [ -n "${AVIARY_LOCAL_BIN:-}" ]; then
        BIN="$AVIARY_LOCAL_BIN"
        BIN_SHOWN="$BIN"
        say "Build: skipped, running the executables in $BIN"
        return
    fi
    ensure_swift_in_path
    say "Build: swift build -c $CONFIG"
    (cd "$AVIARY_ROOT" && swift build -c "$CONFIG")
    BIN="$(cd "$AVIARY_ROOT" && swift build -c "$CONFIG" --show-bin-path)"
    BIN_SHOWN=".build/$CONFIG"
}

# Prints the pid of the service when it runs (and is what the pid file says it is).
service_pid() { live_pid "$RUN/$1.pid" "aviary-$1"; }

start_service() {
    local name="$1" pid log="$LOGS/$1.log" rpc admin
    rpc="$(rpc_port "$name")"
    admin="$(admin_port "$name")"
    if pid="$(service_pid "$name")"; then
        say "  $name: already runs (pid $pid)"
    else
        [ -x "$BIN/aviary-$name" ] || die "$BIN/aviary-$name is missing"
        if port_in_use "$rpc" || port_in_use "$admin"; then
            die "$name: port $rpc or $admin is already taken by another program"
        fi
        [ "$name" = gateway ] && choose_gateway_port
        launch_service "$log" stack.sh "$BIN/aviary-$name"
        pid="$LAUNCHED_PID"
        echo "$pid" >"$RUN/$name.pid"
        say "  $name: started (pid $pid)"
    fi
    await_ready "$name" "$pid" "$admin" "$log" deploy/local/stack.sh
}

# The gateway's public port: AVIARY_GATEWAY_PORT when set (it must be free), else 8080 or, when
# another program has that, the next free port; exported for the gateway, kept in run/gateway.port.
choose_gateway_port() {
    local port="${AVIARY_GATEWAY_PORT:-8080}"
    if port_in_use "$port"; then
        [ -z "${AVIARY_GATEWAY_PORT:-}" ] || die "gateway: port $port (AVIARY_GATEWAY_PORT) is already taken by another program"
        port="$(free_port_from $((port + 1)))"
        say "  gateway: port 8080 is taken by another program; its public port is $port"
    fi
    echo "$port" >"$RUN/gateway.port"
    export AVIARY_GATEWAY_PORT="$port"
}

stop_service() {
    local name="$1" pid
    if pid="$(service_pid "$name")"; then
        end_process "$pid" TERM 20 "$name"
        say "  $name: stopped (pid $pid)"
    fi
    rm -f "$RUN/$name.pid" "$RUN/$name.port"
}

print_table() {
    local name format='%-15s %-17s %-17s %s\n'
    echo
    # shellcheck disable=SC2059
    printf "$format" service RPC admin log
    for name in "${SERVICES[@]}"; do
        # shellcheck disable=SC2059
        printf "$format" "$name" "127.0.0.1:$(rpc_port "$name")" "127.0.0.1:$(admin_port "$name")" \
            "$(short "$LOGS/$name.log")"
    done
    echo
    say "Apps:     http://127.0.0.1:$(gateway_port) (the gateway: POST /rpc, WebSocket GET /rpc, POST /media)"
    say "Try one:  $BIN_SHOWN/aviary call tweets rpc.discover"
    say "Stop all: deploy/local/stack.sh down"
}

# ---------------------------------------------------------------------------------------------

up() {
    case "$CONFIG" in debug | release) ;; *) die "AVIARY_BUILD must be debug or release" ;; esac
    ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}"
    mkdir -p "$LOGS" "$RUN"
    start_postgres
    start_pgbouncer
    start_redis
    start_mail
    build
    # Uploaded media live with the rest of the local data unless told otherwise.
    export AVIARY_MEDIA_ROOT="${AVIARY_MEDIA_ROOT:-$STATE/media}"
    mkdir -p "$AVIARY_MEDIA_ROOT"
    # Eight processes (the services and the gateway) share this machine: a loop per core each would
    # wake more threads than there are cores, so each gets a quarter of them (one on a machine of up
    # to seven cores).
    export AVIARY_EVENT_LOOPS="${AVIARY_EVENT_LOOPS:-$(( $(nproc) / 4 > 1 ? $(nproc) / 4 : 1 ))}"
    say "Services (Postgres $AVIARY_POSTGRES_URL, Redis $AVIARY_REDIS_URL, media in $(short "$AVIARY_MEDIA_ROOT")):"
    local name
    for name in "${SERVICES[@]}"; do
        start_service "$name"
    done
    print_table
}

down() {
    local index
    for ((index = ${#SERVICES[@]} - 1; index >= 0; index--)); do
        stop_service "${SERVICES[index]}"
    done
    stop_mail
    stop_redis
    stop_pgbouncer
    stop_postgres
    rm -f "$RUN/postgres.url" "$RUN/redis.url"
}

status() {
    local pid name
    if pid="$(postgres_pid)"; then
        say "Postgres: ours runs (pid $pid, port $(postgres_port))"
    elif [ -f "$RUN/postgres.url" ]; then
        say "Postgres: not ours ($(cat "$RUN/postgres.url"))"
    else
        say "Postgres: not running"
    fi
    if pid="$(pgbouncer_pid)"; then
        say "PgBouncer: ours runs (pid $pid, port $(cat "$RUN/pgbouncer.port"))"
    fi
    if pid="$(redis_pid)"; then
        say "Redis: ours runs (pid $pid, $(cat "$RUN/redis.url" 2>/dev/null))"
    elif [ -f "$RUN/redis.url" ]; then
        say "Redis: not ours ($(cat "$RUN/redis.url"))"
    else
        say "Redis: not running"
    fi
    if pid="$(mail_pid)"; then
        say "Mail: ours runs (pid $pid, port $(cat "$RUN/smtp.port"), kept in $(short "$MAIL_DIR"))"
    fi
    for name in "${SERVICES[@]}"; do
        if pid="$(service_pid "$name")"; then
            local ready="not ready"
            is_ready "$(admin_port "$name")" && ready="ready"
            local public=""
            [ "$name" = gateway ] && public=", public http://127.0.0.1:$(gateway_port)"
            printf '%-15s runs (pid %s), %s, rpc 127.0.0.1:%s%s\n' "$name" "$pid" "$ready" "$(rpc_port "$name")" "$public"
        else
            printf '%-15s stopped\n' "$name"
        fi
    done
}

case "${1:-} ${2:-}" in
"up " | "down " | "status ") "$1" ;;
"stop redis" | "start redis" | "stop postgres" | "start postgres")
    # Our own server, whatever the caller's AVIARY_*_URL (a load generator's, pointing at it) says.
    unset AVIARY_REDIS_URL AVIARY_POSTGRES_URL
    "$1_$2"
    ;;
*)
    echo "usage: $0 up|down|status, or $0 stop|start redis|postgres" >&2
    exit 2
    ;;
esac
