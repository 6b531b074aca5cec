#!/usr/bin/env bash
# Runs a replicated suite on this machine, on loopback, to try failovers: a six-node Redis Cluster,
# a Redis pair under three sentinels, a Postgres primary with a streaming replica and PgBouncer in
# front of it, and two instances of each of the seven services and of the gateway.
#
#   deploy/local/cluster.sh up                 install what is missing, start what does not run yet,
#                                              print the addresses (also in .aviary-local/cluster/env.sh)
#   deploy/local/cluster.sh down               stop everything `up` started (the data stays)
#   deploy/local/cluster.sh status             each process: pid, port, health
#   deploy/local/cluster.sh kill-redis-master [port]   SIGKILL a Redis Cluster master (the first, or
#                                              the one on port), then show its replica take over
#   deploy/local/cluster.sh promote-postgres   stop the Postgres primary and promote its replica;
#                                              PgBouncer follows; the next `up` makes the old primary
#                                              a replica again (afresh, with pg_basebackup)
#   deploy/local/cluster.sh purge              down, then delete .aviary-local/cluster
#
# Ports, all apart from stack.sh's (5432, 6379, 6432, 71xx, 72xx, 8080), so both can run at once:
#   7301-7306    Redis Cluster nodes: three masters, one replica each (cluster-node-timeout 2000)
#   7311, 7312   the Sentinel pair: master and replica at first
#   7321-7323    its sentinels: master name aviary, quorum 2, down after 2000 ms
#   7331, 7332   Postgres pg1 (the primary at first) and pg2 (its streaming replica)
#   7333         PgBouncer, transaction mode, in front of whichever is the primary
#   74NS / 75NS  JSON-RPC / admin HTTP of instance N (1, 2) of the service whose contract port is
#                71S: auth 7411/7511 and 7421/7521, tweets 7412/7512 and 7422/7522, ... gateway 7418/7518
#   7481, 7482   the two gateways' public HTTP/WebSocket ports
#
# Everything lives in .aviary-local/cluster/: redis-cluster/<port>/ and redis-sentinel/<port>/
# (config, append-only files), postgres/ (pg1, pg2, pgbouncer; as root in a folder closed to the
# cluster's OS user, /var/lib/aviary-local/<hash>/cluster-postgres, linked from there), media/,
# logs/, run/ (pid files) and env.sh (`export VAR=...` lines: source it to reach the cluster).
#
# Environment:
#   AVIARY_CLUSTER_REDIS      the services' Redis: cluster (default, redis+cluster:// to 7301-7303),
#                             sentinel (redis+sentinel:// to 7321-7323, master aviary) or single
#                             (redis:// to the Sentinel pair's master)
#   AVIARY_CLUSTER_PGBOUNCER  1 (default): the services reach Postgres through PgBouncer, with
#                             AVIARY_POSTGRES_PREPARED=off; 0: through a libpq multi-host URL of
#                             pg1 and pg2 with target_session_attrs=read-write
#   AVIARY_LOCAL_BIN          the executables (.build/release when it has all eight, else
#                             .build/debug); this script builds nothing
#   AVIARY_LOCAL_TIMEOUT      seconds to wait for each service to be ready (60)
#   AVIARY_LOCAL_PGBOUNCER_POOL  PgBouncer's server connections (20)
#   AVIARY_EVENT_LOOPS        event-loop threads of each service (an eighth of the cores, at least 1)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCRIPT=deploy/local/cluster.sh
CLUSTER="$AVIARY_ROOT/.aviary-local/cluster"
LOGS="$CLUSTER/logs"
RUN="$CLUSTER/run"
MEDIA="$CLUSTER/media"
ENV_FILE="$CLUSTER/env.sh"
# Postgres's files; kept outside the repository when it is closed to their OS user (see prepare_postgres_home).
PGC="$CLUSTER/postgres"
[ -L "$PGC" ] && PGC="$(readlink -m "$PGC")"

REDIS_MODE="${AVIARY_CLUSTER_REDIS:-cluster}"
USE_PGBOUNCER="${AVIARY_CLUSTER_PGBOUNCER:-1}"

CLUSTER_PORTS=(7301 7302 7303 7304 7305 7306)
PAIR_PORTS=(7311 7312)
SENTINEL_PORTS=(7321 7322 7323)
PG_NODES=(pg1 pg2)
PGBOUNCER_PORT=7333
INSTANCES=(1 2)

PG_BIN=""
BIN=""

# ---------------------------------------------------------------------------------------------
# Addresses.

instance_rpc_port() { echo $(($(contract_rpc_port "$1") - 7100 + 7400 + 10 * $2)); }
instance_admin_port() { echo $(($(instance_rpc_port "$1" "$2") + 100)); }
gateway_public_port() { echo $((7480 + $1)); }

# AVIARY_SOCIAL_GRAPH_ADDRESSES for social-graph, and its value: both instances.
addresses_variable() {
    local upper="${1^^}"
    echo "AVIARY_${upper//-/_}_ADDRESSES"
}
addresses_of() { echo "127.0.0.1:$(instance_rpc_port "$1" 1),127.0.0.1:$(instance_rpc_port "$1" 2)"; }

pg_port() {
    case "$1" in
    pg1) echo 7331 ;;
    pg2) echo 7332 ;;
    *) die "unknown Postgres node $1" ;;
    esac
}
other_pg_node() { if [ "$1" = pg1 ]; then echo pg2; else echo pg1; fi; }
# Which node is the primary: pg1 until promote-postgres promotes the other.
primary_pg_node() { cat "$PGC/primary" 2>/dev/null || echo pg1; }
pg_url() { echo "postgres://aviary@127.0.0.1:$1/aviary"; }

join_by_comma() {
    local IFS=,
    echo "$*"
}

cluster_redis_url() {
    local port seeds=()
    for port in "${CLUSTER_PORTS[@]:0:3}"; do seeds+=("127.0.0.1:$port"); done
    echo "redis+cluster://$(join_by_comma "${seeds[@]}")"
}

sentinel_redis_url() {
    local port hosts=()
    for port in "${SENTINEL_PORTS[@]}"; do hosts+=("127.0.0.1:$port"); done
    echo "redis+sentinel://$(join_by_comma "${hosts[@]}")/aviary"
}

# The Sentinel pair's master as the first sentinel that answers sees it ("host port"); the first
# server of the pair when none answers.
pair_master() {
    local port answer
    for port in "${SENTINEL_PORTS[@]}"; do
        answer="$(redis-cli -p "$port" sentinel get-master-addr-by-name aviary 2>/dev/null | tr -d '\r' | paste -sd ' ')"
        if [[ $answer =~ ^[0-9.]+\ [0-9]+$ ]]; then
            echo "$answer"
            return
        fi
    done
    echo "127.0.0.1 ${PAIR_PORTS[0]}"
}

services_redis_url() {
    case "$REDIS_MODE" in
    cluster) cluster_redis_url ;;
    sentinel) sentinel_redis_url ;;
    single)
        local master
        master="$(pair_master)"
        echo "redis://${master% *}:${master#* }"
        ;;
    *) die "AVIARY_CLUSTER_REDIS must be cluster, sentinel or single" ;;
    esac
}

multihost_postgres_url() {
    echo "postgres://aviary@127.0.0.1:$(pg_port pg1),127.0.0.1:$(pg_port pg2)/aviary?target_session_attrs=read-write"
}

services_postgres_url() {
    case "$USE_PGBOUNCER" in
    1) pg_url "$PGBOUNCER_PORT" ;;
    0) multihost_postgres_url ;;
    *) die "AVIARY_CLUSTER_PGBOUNCER must be 1 or 0" ;;
    esac
}

# Dies when port $1, which $2 is to listen on, is taken by a program not ours.
claim_port() {
    if port_in_use "$1"; then die "$2: port $1 is taken by another program (stack.sh's ports are apart; see the top of $SCRIPT)"; fi
}

now_ms() { date +%s%3N; }
seconds_since() { awk -v ms="$(($(now_ms) - $1))" 'BEGIN { printf "%.1f", ms / 1000 }'; }

# ---------------------------------------------------------------------------------------------
# Redis: the Cluster's six nodes, the Sentinel pair and its sentinels, each a daemon with its
# config and append-only file in a folder of its own.

redis_server_pid() { live_pid "$RUN/redis-$1.pid" redis; }

# Starts the Redis (or, with $3 sentinel, the sentinel) on port $1 with its files in folder $2; its
# config is written there the first time, from the lines that follow, and later starts keep what
# Redis or a sentinel rewrote in it since (a replica promoted by the sentinels stays master).
start_redis_server() {
    local port="$1" dir="$2" kind="$3" pid
    shift 3
    if pid="$(redis_server_pid "$port")"; then
        say "  $kind 127.0.0.1:$port: already runs (pid $pid)"
        return
    fi
    claim_port "$port" "$kind"
    mkdir -p "$dir"
    if [ ! -f "$dir/redis.conf" ]; then
        printf '%s\n' "# Written by $SCRIPT; Redis rewrites it." "port $port" "bind 127.0.0.1" "dir $dir" \
            "daemonize yes" "pidfile $RUN/redis-$port.pid" "logfile $LOGS/redis-$port.log" "$@" >"$dir/redis.conf"
    fi
    local sentinel=()
    [ "$kind" = sentinel ] && sentinel=(--sentinel)
    redis-server "$dir/redis.conf" "${sentinel[@]}"
    wait_for 15 redis_answers "$port" || {
        tail -n 20 "$LOGS/redis-$port.log" >&2
        die "$kind on $port did not start, see $(short "$LOGS/redis-$port.log")"
    }
    say "  $kind 127.0.0.1:$port: started (pid $(redis_server_pid "$port"))"
}

# Field $2 of CLUSTER INFO on port $1.
cluster_info() { redis-cli -p "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

cluster_ok_everywhere() {
    local port
    for port in "${CLUSTER_PORTS[@]}"; do
        [ "$(cluster_info "$port" cluster_state)" = ok ] || return 1
    done
}

start_redis_cluster() {
    say "Redis Cluster:"
    local port
    for port in "${CLUSTER_PORTS[@]}"; do
        start_redis_server "$port" "$CLUSTER/redis-cluster/$port" "cluster node" \
            "cluster-enabled yes" "cluster-config-file nodes.conf" "cluster-node-timeout 2000" \
            "appendonly yes" 'save ""' "repl-diskless-sync-delay 0"
    done
    cluster_ok_everywhere && {
        say "  cluster_state:ok on all six nodes"
        return
    }
    # Fresh nodes know only themselves and serve no slots; nodes that were a cluster before find
    # each other again from their nodes.conf.
    local fresh=1
    for port in "${CLUSTER_PORTS[@]}"; do
        if [ "$(cluster_info "$port" cluster_known_nodes)" != 1 ] || [ "$(cluster_info "$port" cluster_slots_assigned)" != 0 ]; then
            fresh=0
        fi
    done
    if [ "$fresh" = 1 ]; then
        local nodes=()
        for port in "${CLUSTER_PORTS[@]}"; do nodes+=("127.0.0.1:$port"); done
        redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
            >"$LOGS/redis-cluster-create.log" 2>&1 || {
            tail -n 20 "$LOGS/redis-cluster-create.log" >&2
            die "redis-cli --cluster create failed, see $(short "$LOGS/redis-cluster-create.log")"
        }
        say "  created: redis-cli --cluster create ${nodes[*]} --cluster-replicas 1 --cluster-yes"
    fi
    wait_for 30 cluster_ok_everywhere ||
        die "Redis Cluster: cluster_state is not ok on every node after 30 s (CLUSTER NODES on 7301 shows why; $SCRIPT purge starts afresh)"
    say "  cluster_state:ok on all six nodes"
}

# Field $2 of SENTINEL MASTER aviary on sentinel port $1.
sentinel_field() {
    redis-cli -p "$1" sentinel master aviary 2>/dev/null | tr -d '\r' | awk -v key="$2" 'NR % 2 == 1 && $0 == key { getline; print; exit }'
}

sentinels_agree() {
    local port
    for port in "${SENTINEL_PORTS[@]}"; do
        [ "$(sentinel_field "$port" num-other-sentinels)" = 2 ] && [ "$(sentinel_field "$port" num-slaves)" -ge 1 ] 2>/dev/null || return 1
    done
}

start_sentinel_pair() {
    say "Sentinel pair (master name aviary):"
    local primary="${PAIR_PORTS[0]}" port
    start_redis_server "$primary" "$CLUSTER/redis-sentinel/$primary" redis "appendonly yes" 'save ""' "repl-diskless-sync-delay 0"
    start_redis_server "${PAIR_PORTS[1]}" "$CLUSTER/redis-sentinel/${PAIR_PORTS[1]}" redis "appendonly yes" 'save ""' "repl-diskless-sync-delay 0" \
        "replicaof 127.0.0.1 $primary"
    for port in "${SENTINEL_PORTS[@]}"; do
        start_redis_server "$port" "$CLUSTER/redis-sentinel/$port" sentinel \
            "sentinel monitor aviary 127.0.0.1 $primary 2" "sentinel down-after-milliseconds aviary 2000" \
            "sentinel failover-timeout aviary 10000" "sentinel parallel-syncs aviary 1"
    done
    # Sentinels find each other and the replica through the master, every 2 s.
    if wait_for 30 sentinels_agree; then
        local master
        master="$(pair_master)"
        say "  each sentinel sees the master at ${master/ /:}, its replica and the two other sentinels"
    else
        warn "the sentinels do not all see each other and the replica yet (status shows what they see)"
    fi
}

stop_redis_servers() {
    local port pid kind
    for port in "${SENTINEL_PORTS[@]}" "${PAIR_PORTS[@]}" "${CLUSTER_PORTS[@]}"; do
        kind=Redis
        [[ " ${SENTINEL_PORTS[*]} " == *" $port "* ]] && kind=sentinel
        if pid="$(redis_server_pid "$port")"; then
            end_process "$pid" TERM 15 "$kind on $port"
            say "  $kind 127.0.0.1:$port: stopped (pid $pid)"
        fi
        rm -f "$RUN/redis-$port.pid"
    done
}

# "master" or "replica of host:port (link state)", from ROLE on port $1.
redis_role() {
    local lines=()
    mapfile -t lines < <(redis-cli -p "$1" role 2>/dev/null | tr -d '\r')
    case "${lines[0]:-}" in
    master) echo master ;;
    slave) echo "replica of ${lines[1]}:${lines[2]} (${lines[3]})" ;;
    sentinel) echo sentinel ;;
    *) echo "not answering" ;;
    esac
}

# The slots a cluster master on port $1 serves, as CLUSTER NODES lists them.
cluster_slots_of() {
    redis-cli -p "$1" cluster nodes 2>/dev/null | awk '$3 ~ /myself/ { for (i = 9; i <= NF; i++) printf "%s%s", (i > 9 ? " " : ""), $i }'
}

# CLUSTER NODES from the first node that answers.
cluster_nodes() {
    local port
    for port in "${CLUSTER_PORTS[@]}"; do
        if redis_answers "$port"; then
            redis-cli -p "$port" cluster nodes | sort -t : -k 2 -n
            return
        fi
    done
    return 1
}

# CLUSTER NODES as seen from port $1, one node a line: address, flags, its master's address or its slots.
show_cluster_nodes() {
    redis-cli -p "$1" cluster nodes | sort -t : -k 2 -n | awk '
        { id[NR] = $1; split($2, a, "@"); address[$1] = a[1]; line[NR] = $0 }
        END {
            for (n = 1; n <= NR; n++) {
                split(line[n], f, " ")
                out = sprintf("  %-16s %-16s", address[f[1]], f[3])
                if (f[4] != "-") out = out " replica of " address[f[4]]
                for (i = 9; i in f; i++) out = out " " f[i]
                print out
            }
        }'
}

kill_redis_master() {
    local chosen="${1:-}" nodes line id address port pid replicas started
    nodes="$(cluster_nodes)" || die "no Redis Cluster node answers: $SCRIPT up"
    # <id> <ip:port@cport> <flags> <master id> <ping> <pong> <epoch> <link> <slots...>
    if [ -n "$chosen" ]; then
        line="$(awk -v port="$chosen" '{ split($2, a, "[:@]") } a[2] == port && $3 ~ /master/ && $3 !~ /fail/' <<<"$nodes")"
        [ -n "$line" ] || die "127.0.0.1:$chosen is not a live master of the Redis Cluster"
    else
        # The first live master that has a live replica.
        line="$(awk '{ row[NR] = $0; id[NR] = $1; flags[NR] = $3 }
            $3 !~ /fail/ && $4 != "-" { served[$4] = 1 }
            END { for (n = 1; n <= NR; n++) if (flags[n] ~ /master/ && flags[n] !~ /fail/ && (id[n] in served)) { print row[n]; exit } }' <<<"$nodes")"
        [ -n "$line" ] || die "no live master of the Redis Cluster has a live replica (after an earlier kill: $SCRIPT up restarts the killed node)"
    fi
    read -r id address _ <<<"$line"
    port="${address%%@*}"
    port="${port##*:}"
    pid="$(redis_server_pid "$port")" || die "the master on $port is not one this script started"
    replicas="$(awk -v id="$id" '$4 == id && $3 !~ /fail/ { split($2, a, "@"); print a[1] }' <<<"$nodes" | paste -sd ' ')"
    [ -n "$replicas" ] || die "the master on $port has no live replica to take over (after an earlier kill: $SCRIPT up restarts the killed node)"
    started="$(now_ms)"
    kill -KILL "$pid"
    say "Redis Cluster: SIGKILLed master 127.0.0.1:$port (pid $pid, slots $(awk '{ for (i = 9; i <= NF; i++) printf "%s%s", (i > 9 ? " " : ""), $i }' <<<"$line")), replica $replicas"
    # A replica of it wins the election once the others mark it failed (cluster-node-timeout 2000).
    local replica_port new="" deadline=$((SECONDS + 30))
    while [ -z "$new" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
        for replica_port in $replicas; do
            replica_port="${replica_port##*:}"
            if [ "$(redis_role "$replica_port")" = master ] && [ "$(cluster_info "$replica_port" cluster_state)" = ok ]; then
                new="$replica_port"
            fi
        done
    done
    [ -n "$new" ] || die "no replica of 127.0.0.1:$port took over within 30 s"
    say "Redis Cluster: 127.0.0.1:$new is master in its place after $(seconds_since "$started") s, cluster_state:ok ($SCRIPT up restarts 127.0.0.1:$port, as a replica)"
    say "CLUSTER NODES:"
    show_cluster_nodes "$new"
}

# ---------------------------------------------------------------------------------------------
# Postgres: pg1 and pg2, one the primary and the other its streaming replica, run as a non-root OS
# user (lib.sh: choose_pg_user, as_pg); PgBouncer in front of the primary.

pg_pid() { postmaster_pid "$PGC/$1"; }

psql_at() {
    local port="$1"
    shift
    "$PG_BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U aviary "$@"
}

# The folder of Postgres's files, usable by its OS user: when we are root and the repository is
# closed to that user (a clone in /root), in /var/lib/aviary-local/<hash>/cluster-postgres instead.
prepare_postgres_home() {
    PG_BIN="$(postgres_bin)"
    choose_pg_user "$PGC/$(primary_pg_node)"
    mkdir -p "$CLUSTER"
    if [ ! -e "$CLUSTER/postgres" ] && closed_to_pg_user "$CLUSTER"; then
        local elsewhere
        elsewhere="$(postgres_home_elsewhere cluster-postgres)"
        # Left there by a folder since deleted, it belongs to nothing: start afresh.
        rm -rf "$elsewhere"
        mkdir -p "$elsewhere"
        ln -s "$elsewhere" "$CLUSTER/postgres"
        PGC="$elsewhere"
        say "  $(short "$CLUSTER") is closed to OS user $PG_USER, so Postgres's files live in $elsewhere"
    fi
    mkdir -p "$PGC"
    if is_root; then chown "$PG_USER" "$PGC"; fi
    chmod 700 "$PGC"
    as_pg test -w "$PGC" || die "OS user $PG_USER cannot write $PGC (is a parent folder closed to it?)"
}

create_primary() {
    local node="$1" data="$PGC/$1"
    say "  $node: creating the primary's cluster in $(short "$data") (OS user $PG_USER, role aviary)"
    init_postgres_cluster "$data" "" "$LOGS/postgres-initdb.log"
    as_pg tee -a "$data/postgresql.conf" >/dev/null <<'EOF'

# Aviary cluster (deploy/local/cluster.sh): small, and streaming to a replica, which
# pg_basebackup gives this same file.
shared_buffers = 64MB
max_connections = 200
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
hot_standby = on
EOF
    as_pg tee -a "$data/pg_hba.conf" >/dev/null <<'EOF'
host replication replicator 127.0.0.1/32 trust
EOF
    echo "$node" >"$PGC/primary"
}

# Starts node $1 (the $2) on its port, as the OS user, with its log beside its data.
start_pg_node() {
    local node="$1" role="$2" port pid log="$PGC/$1.log"
    port="$(pg_port "$node")"
    if pid="$(pg_pid "$node")"; then
        say "  $node ($role): already runs (pid $pid, 127.0.0.1:$port)"
        return
    fi
    claim_port "$port" "Postgres $node"
    touch "$log"
    if is_root; then chown "$PG_USER" "$log"; fi
    ln -sfn "$log" "$LOGS/postgres-$node.log"
    as_pg "$PG_BIN/pg_ctl" start -D "$PGC/$node" -l "$log" -w -t 60 -o "-p $port" >/dev/null || {
        tail -n 20 "$log" >&2
        die "Postgres $node did not start, see $(short "$LOGS/postgres-$node.log")"
    }
    say "  $node ($role): started on 127.0.0.1:$port (pid $(pg_pid "$node"))"
}

stop_pg_node() {
    local pid
    pid="$(pg_pid "$1")" || return 0
    as_pg "$PG_BIN/pg_ctl" stop -D "$PGC/$1" -m fast -w -t 60 >/dev/null
    say "  Postgres $1: stopped (pid $pid)"
}

# Makes node $1 a streaming replica of node $2 afresh: pg_basebackup -R, through a replication slot.
clone_replica() {
    local node="$1" primary="$2" slot="aviary_$1" primary_port
    primary_port="$(pg_port "$primary")"
    say "  $node: cloning $primary with pg_basebackup -R (slot $slot)"
    # A slot left by an earlier replica would make -C fail.
    psql_at "$primary_port" -d postgres -c \
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$slot' AND NOT active" >/dev/null
    rm -rf "${PGC:?}/$node"
    as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U replicator -D "$PGC/$node" \
        -R -X stream -C -S "$slot" --checkpoint=fast >"$LOGS/pg_basebackup.log" 2>&1 || {
        tail -n 20 "$LOGS/pg_basebackup.log" >&2
        die "pg_basebackup failed, see $(short "$LOGS/pg_basebackup.log")"
    }
}

takes_writes() { [ "$(psql_at "$1" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; }

replica_streams() {
    [ "$(psql_at "$1" -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ] 2>/dev/null
}

start_postgres_pair() {
    say "Postgres:"
    prepare_postgres_home
    local primary replica primary_port
    primary="$(primary_pg_node)"
    replica="$(other_pg_node "$primary")"
    primary_port="$(pg_port "$primary")"
    [ -f "$PGC/$primary/PG_VERSION" ] || create_primary "$primary"
    start_pg_node "$primary" primary
    if [ "$(psql_at "$primary_port" -d postgres -c 'SELECT pg_is_in_recovery()')" != f ]; then
        die "Postgres $primary should be the primary but is in recovery ($SCRIPT purge starts afresh)"
    fi
    # Before any service: the services migrate the database on their first start, on the primary.
    if [ "$(psql_at "$primary_port" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'aviary'")" != 1 ]; then
        psql_at "$primary_port" -d postgres -c 'CREATE DATABASE aviary'
        say "  $primary: created the database aviary"
    fi
    if [ "$(psql_at "$primary_port" -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'replicator'")" != 1 ]; then
        psql_at "$primary_port" -d postgres -c 'CREATE ROLE replicator WITH REPLICATION LOGIN'
        say "  $primary: created the role replicator"
    fi
    # A node with data but no standby.signal is a former primary, whose replica was promoted
    # since: it would be a second primary, so it is made a replica afresh.
    if [ -f "$PGC/$replica/PG_VERSION" ] && [ ! -f "$PGC/$replica/standby.signal" ]; then
        say "  $replica: was the primary before $primary was promoted"
        stop_pg_node "$replica"
        rm -rf "${PGC:?}/$replica"
    fi
    [ -f "$PGC/$replica/PG_VERSION" ] || clone_replica "$replica" "$primary"
    start_pg_node "$replica" replica
    if wait_for 30 replica_streams "$primary_port"; then
        say "  $replica streams from $primary"
    else
        warn "$replica does not stream from $primary yet, see $(short "$LOGS/postgres-$replica.log")"
    fi
}

pgbouncer_pid() { live_pid "$PGC/pgbouncer/pgbouncer.pid" pgbouncer; }

start_cluster_pgbouncer() {
    local dir="$PGC/pgbouncer" primary_port pid
    primary_port="$(pg_port "$(primary_pg_node)")"
    write_pgbouncer_config "$dir" 127.0.0.1 "$primary_port" "$PGBOUNCER_PORT"
    ln -sfn "$dir/pgbouncer.log" "$LOGS/pgbouncer.log"
    if pid="$(pgbouncer_pid)"; then
        # Rereads its config, in case the primary changed.
        kill -HUP "$pid"
        say "  PgBouncer: already runs (pid $pid, 127.0.0.1:$PGBOUNCER_PORT, in front of 127.0.0.1:$primary_port)"
        return
    fi
    claim_port "$PGBOUNCER_PORT" PgBouncer
    start_pgbouncer_daemon "$dir" "$PGBOUNCER_PORT"
    say "  PgBouncer: started on 127.0.0.1:$PGBOUNCER_PORT, transaction mode, in front of 127.0.0.1:$primary_port (pid $(pgbouncer_pid))"
}

promote_postgres() {
    PG_BIN="$(postgres_bin)"
    local primary replica replica_port pid started
    primary="$(primary_pg_node)"
    replica="$(other_pg_node "$primary")"
    replica_port="$(pg_port "$replica")"
    choose_pg_user "$PGC/$replica"
    pg_pid "$replica" >/dev/null || die "the replica, $replica, does not run: nothing to promote ($SCRIPT up)"
    [ "$(psql_at "$replica_port" -d postgres -c 'SELECT pg_is_in_recovery()')" = t ] ||
        die "$replica is not in recovery"
    started="$(now_ms)"
    stop_pg_node "$primary"
    as_pg "$PG_BIN/pg_ctl" promote -D "$PGC/$replica" -w -t 60 >/dev/null || die "pg_ctl promote failed, see $(short "$LOGS/postgres-$replica.log")"
    echo "$replica" >"$PGC/primary"
    wait_for 30 takes_writes "$replica_port" || warn "$replica is still in recovery after 30 s"
    say "Postgres: $replica (127.0.0.1:$replica_port) promoted, pg_is_in_recovery $(psql_at "$replica_port" -d postgres -c 'SELECT pg_is_in_recovery()'), $(seconds_since "$started") s after stopping $primary"
    write_pgbouncer_config "$PGC/pgbouncer" 127.0.0.1 "$replica_port" "$PGBOUNCER_PORT"
    if pid="$(pgbouncer_pid)"; then
        kill -HUP "$pid"
        say "PgBouncer: now in front of 127.0.0.1:$replica_port (config reloaded)"
    fi
    say "The multi-host URL finds it by itself; $SCRIPT up makes $primary its replica afresh."
}

# ---------------------------------------------------------------------------------------------
# The services: two instances of each, the first of each started (and migrating) alone.

choose_bin() {
    local folder name complete
    if [ -n "${AVIARY_LOCAL_BIN:-}" ]; then
        BIN="$AVIARY_LOCAL_BIN"
    else
        BIN="$AVIARY_ROOT/.build/debug"
        for folder in "$AVIARY_ROOT/.build/release" "$AVIARY_ROOT/.build/debug"; do
            complete=1
            for name in "${SERVICES[@]}"; do [ -x "$folder/aviary-$name" ] || complete=0; done
            if [ "$complete" = 1 ]; then
                BIN="$folder"
                break
            fi
        done
    fi
    for name in "${SERVICES[@]}"; do
        [ -x "$BIN/aviary-$name" ] || die "$BIN/aviary-$name is missing: build first (swift build -c release), or set AVIARY_LOCAL_BIN"
    done
}

instance_pid() { live_pid "$RUN/$1-$2.pid" "aviary-$1"; }

# What every instance gets: the storage, where each service's two instances are, the media folder.
export_service_environment() {
    local name
    export AVIARY_REDIS_URL AVIARY_POSTGRES_URL AVIARY_POSTGRES_PREPARED=on
    AVIARY_REDIS_URL="$(services_redis_url)"
    AVIARY_POSTGRES_URL="$(services_postgres_url)"
    if [ "$USE_PGBOUNCER" = 1 ]; then AVIARY_POSTGRES_PREPARED=off; fi
    # The streaming replica serves the reads that tolerate a little lag (follower pages, history).
    export AVIARY_POSTGRES_REPLICA_URLS
    AVIARY_POSTGRES_REPLICA_URLS="$(pg_url "$(pg_port "$(other_pg_node "$(primary_pg_node)")")")"
    for name in "${SERVICES[@]}"; do
        export "$(addresses_variable "$name")=$(addresses_of "$name")"
    done
    export AVIARY_MEDIA_ROOT="$MEDIA" AVIARY_MEDIA_PUBLIC_URL
    AVIARY_MEDIA_PUBLIC_URL="http://127.0.0.1:$(instance_admin_port media 1)"
    # Sixteen processes share this machine: an eighth of the cores each, at least one.
    export AVIARY_EVENT_LOOPS="${AVIARY_EVENT_LOOPS:-$(($(nproc) / 8 > 1 ? $(nproc) / 8 : 1))}"
    # Each process leases a node id of its own.
    unset AVIARY_NODE_ID
    mkdir -p "$MEDIA"
}

# Starts instance $2 of service $1 unless it runs; sets LAUNCHED_PID ("" when it ran already).
launch_instance() {
    local name="$1" n="$2" pid rpc admin settings=()
    LAUNCHED_PID=""
    if pid="$(instance_pid "$name" "$n")"; then
        say "  $name-$n: already runs (pid $pid)"
        return
    fi
    rpc="$(instance_rpc_port "$name" "$n")"
    admin="$(instance_admin_port "$name" "$n")"
    claim_port "$rpc" "$name-$n"
    claim_port "$admin" "$name-$n"
    settings=("AVIARY_RPC_PORT=$rpc" "AVIARY_ADMIN_PORT=$admin")
    if [ "$name" = gateway ]; then
        claim_port "$(gateway_public_port "$n")" "$name-$n"
        settings+=("AVIARY_GATEWAY_PORT=$(gateway_public_port "$n")")
    fi
    launch_service "$LOGS/$name-$n.log" cluster.sh env "${settings[@]}" "$BIN/aviary-$name"
    echo "$LAUNCHED_PID" >"$RUN/$name-$n.pid"
    say "  $name-$n: started (pid $LAUNCHED_PID, rpc $rpc, admin $admin)"
}

start_services() {
    choose_bin
    export_service_environment
    say "Services ($(short "$BIN"); Redis $AVIARY_REDIS_URL, Postgres $AVIARY_POSTGRES_URL):"
    local name pid
    # The first instances one at a time, each ready (its migrations applied on the primary) before the next.
    for name in "${SERVICES[@]}"; do
        launch_instance "$name" 1
        pid="$(cat "$RUN/$name-1.pid")"
        await_ready "$name-1" "$pid" "$(instance_admin_port "$name" 1)" "$LOGS/$name-1.log" "$SCRIPT"
    done
    # Then the second instances together.
    for name in "${SERVICES[@]}"; do launch_instance "$name" 2; done
    for name in "${SERVICES[@]}"; do
        pid="$(cat "$RUN/$name-2.pid")"
        await_ready "$name-2" "$pid" "$(instance_admin_port "$name" 2)" "$LOGS/$name-2.log" "$SCRIPT"
    done
}

stop_services() {
    local index name n pid stopping=()
    # The gateways first, as stack.sh does; TERM to all, then wait for each.
    for ((index = ${#SERVICES[@]} - 1; index >= 0; index--)); do
        name="${SERVICES[index]}"
        for n in "${INSTANCES[@]}"; do
            if pid="$(instance_pid "$name" "$n")"; then
                kill -TERM "$pid"
                stopping+=("$name-$n:$pid")
            fi
            rm -f "$RUN/$name-$n.pid"
        done
    done
    local entry
    for entry in ${stopping[@]+"${stopping[@]}"}; do
        end_process "${entry##*:}" TERM 20 "${entry%%:*}"
        say "  ${entry%%:*}: stopped (pid ${entry##*:})"
    done
}

# ---------------------------------------------------------------------------------------------

write_env_file() {
    local name
    {
        echo "# Written by $SCRIPT up on $(date '+%F %T'): source it to reach the cluster."
        printf "export %s='%s'\n" \
            AVIARY_CLUSTER_GATEWAY_URLS "http://127.0.0.1:$(gateway_public_port 1),http://127.0.0.1:$(gateway_public_port 2)" \
            AVIARY_REDIS_URL "$AVIARY_REDIS_URL" \
            AVIARY_CLUSTER_REDIS_CLUSTER_URL "$(cluster_redis_url)" \
            AVIARY_CLUSTER_REDIS_SENTINEL_URL "$(sentinel_redis_url)" \
            AVIARY_POSTGRES_URL "$AVIARY_POSTGRES_URL" \
            AVIARY_POSTGRES_PREPARED "$AVIARY_POSTGRES_PREPARED" \
            AVIARY_CLUSTER_POSTGRES_PRIMARY_URL "$(pg_url "$(pg_port "$(primary_pg_node)")")" \
            AVIARY_CLUSTER_POSTGRES_REPLICA_URL "$(pg_url "$(pg_port "$(other_pg_node "$(primary_pg_node)")")")" \
            AVIARY_CLUSTER_POSTGRES_MULTIHOST_URL "$(multihost_postgres_url)" \
            AVIARY_CLUSTER_PGBOUNCER_URL "$(pg_url "$PGBOUNCER_PORT")" \
            AVIARY_MEDIA_PUBLIC_URL "$AVIARY_MEDIA_PUBLIC_URL"
        local admins=() n
        for name in "${SERVICES[@]}"; do
            printf "export %s='%s'\n" "$(addresses_variable "$name")" "$(addresses_of "$name")"
            for n in "${INSTANCES[@]}"; do admins+=("127.0.0.1:$(instance_admin_port "$name" "$n")"); done
        done
        # Every instance's admin port, for the benches' figures read from /metrics.
        printf "export AVIARY_BENCH_ADMINS='%s'\n" "$(IFS=,; echo "${admins[*]}")"
    } >"$ENV_FILE"
}

print_addresses() {
    local name n format='%-16s %-17s %-17s %s\n'
    echo
    # shellcheck disable=SC2059
    printf "$format" instance RPC admin log
    for name in "${SERVICES[@]}"; do
        for n in "${INSTANCES[@]}"; do
            # shellcheck disable=SC2059
            printf "$format" "$name-$n" "127.0.0.1:$(instance_rpc_port "$name" "$n")" \
                "127.0.0.1:$(instance_admin_port "$name" "$n")" "$(short "$LOGS/$name-$n.log")"
        done
    done
    echo
    say "Gateways:    http://127.0.0.1:$(gateway_public_port 1) and http://127.0.0.1:$(gateway_public_port 2) (POST /rpc, WebSocket GET /rpc, POST /media)"
    say "Redis:       AVIARY_REDIS_URL=$AVIARY_REDIS_URL"
    say "             (cluster $(cluster_redis_url), sentinel $(sentinel_redis_url))"
    say "Postgres:    AVIARY_POSTGRES_URL=$AVIARY_POSTGRES_URL (AVIARY_POSTGRES_PREPARED=$AVIARY_POSTGRES_PREPARED)"
    say "             primary $(pg_url "$(pg_port "$(primary_pg_node)")"), replica $(pg_url "$(pg_port "$(other_pg_node "$(primary_pg_node)")")"), multi-host $(multihost_postgres_url)"
    say "Environment: source $(short "$ENV_FILE")"
    say "Stop all:    $SCRIPT down"
}

up() {
    case "$REDIS_MODE" in cluster | sentinel | single) ;; *) die "AVIARY_CLUSTER_REDIS must be cluster, sentinel or single" ;; esac
    case "$USE_PGBOUNCER" in 0 | 1) ;; *) die "AVIARY_CLUSTER_PGBOUNCER must be 1 or 0" ;; esac
    ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}"
    mkdir -p "$LOGS" "$RUN"
    start_redis_cluster
    start_sentinel_pair
    start_postgres_pair
    start_cluster_pgbouncer
    export_service_environment
    write_env_file
    say "Addresses written to $(short "$ENV_FILE")"
    start_services
    print_addresses
}

down() {
    say "Services:"
    stop_services
    say "Postgres:"
    local pid node
    if pid="$(pgbouncer_pid)"; then
        end_process "$pid" INT 15 PgBouncer
        say "  PgBouncer: stopped (pid $pid)"
    fi
    for node in "$(other_pg_node "$(primary_pg_node)")" "$(primary_pg_node)"; do
        if [ -d "$PGC/$node" ]; then
            PG_BIN="$(postgres_bin)"
            choose_pg_user "$PGC/$node"
            stop_pg_node "$node"
        fi
    done
    say "Redis:"
    stop_redis_servers
    rm -f "$ENV_FILE"
}

purge() {
    down
    local target
    if [ -L "$CLUSTER/postgres" ]; then
        target="$(readlink -m "$CLUSTER/postgres")"
        rm -rf "$target"
    fi
    rm -rf "$CLUSTER"
    say "Deleted $(short "$CLUSTER")"
}

status() {
    local port pid node name n format='  %-22s %-12s %s\n'
    say "Redis Cluster:"
    for port in "${CLUSTER_PORTS[@]}"; do
        if pid="$(redis_server_pid "$port")"; then
            local role
            role="$(redis_role "$port")"
            [ "$role" = master ] && role="master, slots $(cluster_slots_of "$port")"
            # shellcheck disable=SC2059
            printf "$format" "127.0.0.1:$port" "pid $pid" "$role, cluster_state:$(cluster_info "$port" cluster_state)"
        else
            # shellcheck disable=SC2059
            printf "$format" "127.0.0.1:$port" stopped ""
        fi
    done
    say "Sentinel pair:"
    for port in "${PAIR_PORTS[@]}"; do
        if pid="$(redis_server_pid "$port")"; then
            # shellcheck disable=SC2059
            printf "$format" "127.0.0.1:$port" "pid $pid" "$(redis_role "$port")"
        else
            # shellcheck disable=SC2059
            printf "$format" "127.0.0.1:$port" stopped ""
        fi
    done
    for port in "${SENTINEL_PORTS[@]}"; do
        if pid="$(redis_server_pid "$port")"; then
            local master
            master="$(redis-cli -p "$port" sentinel get-master-addr-by-name aviary 2>/dev/null | tr -d '\r' | paste -sd :)"
            # shellcheck disable=SC2059
            printf "$format" "sentinel 127.0.0.1:$port" "pid $pid" "master aviary at ${master:-?}, $(sentinel_field "$port" num-slaves) replica(s), $(sentinel_field "$port" num-other-sentinels) other sentinels, flags $(sentinel_field "$port" flags)"
        else
            # shellcheck disable=SC2059
            printf "$format" "sentinel 127.0.0.1:$port" stopped ""
        fi
    done
    say "Postgres:"
    PG_BIN="$(postgres_bin)"
    local primary primary_port
    primary="$(primary_pg_node)"
    primary_port="$(pg_port "$primary")"
    for node in "${PG_NODES[@]}"; do
        port="$(pg_port "$node")"
        if pid="$(pg_pid "$node")"; then
            local recovery health
            recovery="$(psql_at "$port" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null || echo '?')"
            if [ "$recovery" = f ]; then
                health="primary (pg_is_in_recovery f)"
            else
                health="replica (pg_is_in_recovery $recovery)"
                local lag
                lag="$(psql_at "$primary_port" -d postgres -F ', ' -c \
                    "SELECT 'replay lag ' || COALESCE(replay_lag::text, '0'), pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) || ' bytes behind, ' || state FROM pg_stat_replication LIMIT 1" 2>/dev/null || true)"
                [ -n "$lag" ] || lag="$(psql_at "$port" -d postgres -c \
                    "SELECT 'not streaming; received but not replayed: ' || COALESCE(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0) || ' bytes'" 2>/dev/null || echo '?')"
                health="$health, $lag"
            fi
            # shellcheck disable=SC2059
            printf "$format" "$node 127.0.0.1:$port" "pid $pid" "$health"
        else
            # shellcheck disable=SC2059
            printf "$format" "$node 127.0.0.1:$port" stopped ""
        fi
    done
    if pid="$(pgbouncer_pid)"; then
        local answers="does not answer"
        psql_at "$PGBOUNCER_PORT" -d aviary -c 'SELECT 1' >/dev/null 2>&1 && answers="answers"
        # shellcheck disable=SC2059
        printf "$format" "PgBouncer 127.0.0.1:$PGBOUNCER_PORT" "pid $pid" \
            "in front of $(sed -n 's/^\* = host=\(.*\) port=\(.*\)$/\1:\2/p' "$PGC/pgbouncer/pgbouncer.ini"), $answers"
    else
        # shellcheck disable=SC2059
        printf "$format" "PgBouncer 127.0.0.1:$PGBOUNCER_PORT" stopped ""
    fi
    say "Services:"
    for name in "${SERVICES[@]}"; do
        for n in "${INSTANCES[@]}"; do
            local admin health public=""
            admin="$(instance_admin_port "$name" "$n")"
            [ "$name" = gateway ] && public=", public http://127.0.0.1:$(gateway_public_port "$n")"
            if pid="$(instance_pid "$name" "$n")"; then
                if is_ready "$admin"; then
                    health="healthz ok, readyz ok"
                elif curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$admin/healthz" 2>/dev/null; then
                    health="healthz ok, readyz NOT ready"
                else
                    health="admin port not answering"
                fi
                # shellcheck disable=SC2059
                printf "$format" "$name-$n" "pid $pid" "rpc 127.0.0.1:$(instance_rpc_port "$name" "$n"), admin 127.0.0.1:$admin$public: $health"
            else
                # shellcheck disable=SC2059
                printf "$format" "$name-$n" stopped ""
            fi
        done
    done
    [ -f "$ENV_FILE" ] && say "Environment: source $(short "$ENV_FILE")"
    return 0
}

case "${1:-}" in
up | down | status | purge) "$1" ;;
kill-redis-master) kill_redis_master "${2:-}" ;;
promote-postgres) promote_postgres ;;
*)
    echo "usage: $0 up|down|status|purge|kill-redis-master [port]|promote-postgres" >&2
    exit 2
    ;;
esac
