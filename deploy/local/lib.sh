# Shared by stack.sh, cluster.sh, test.sh, fuzz.sh and .ci/run (sourced, not run). Bash.

AVIARY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# What building, testing and running Aviary needs from Debian.
AVIARY_APT_PACKAGES=(
    postgresql postgresql-contrib redis-server libpq-dev libhiredis-dev libargon2-dev libjemalloc-dev libcurl4-openssl-dev pkg-config curl
    procps openssl pgbouncer
)
# What the test suite needs besides: the Mastodon client tests make a virtual environment and
# install Mastodon.py and toot into it from PyPI; the mail tests hand auth's mail to aiosmtpd.
AVIARY_TEST_APT_PACKAGES=(python3 python3-venv python3-aiosmtpd)

say() { printf '%s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
    if is_root; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "root is needed for: $* (and sudo is not installed)"
    fi
}

# Installs whichever of the given packages are missing; apt-get update only runs when one is.
ensure_apt_packages() {
    local package missing=()
    for package in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$package")
        fi
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    say "Installing ${missing[*]}"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# Swift lives in /opt/swift on the CI machines, which is not always in PATH.
ensure_swift_in_path() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || die "swift not found (install it, or put it in PATH)"
}

# The folder of the newest PostgreSQL server programs (Debian keeps them out of PATH).
postgres_bin() {
    local newest
    newest="$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' 2>/dev/null |
        sort -V | tail -n 1)"
    [ -n "$newest" ] || die "PostgreSQL server programs not found in /usr/lib/postgresql/*/bin"
    dirname "$newest"
}

# Makes sure the system account exists (Postgres refuses to run as root), creating it if needed.
ensure_system_user() {
    local name="$1"
    id -u "$name" >/dev/null 2>&1 && return 0
    say "Creating the system user $name"
    as_root useradd --system --no-create-home --shell /usr/sbin/nologin "$name"
}

# Is something listening on 127.0.0.1:$1?
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The first port from $1 on (20 tried) that nothing listens on.
free_port_from() {
    local port
    for port in $(seq "$1" $(($1 + 20))); do
        port_in_use "$port" || { echo "$port"; return 0; }
    done
    die "ports $1 to $(($1 + 20)) are all taken"
}

# ---------------------------------------------------------------------------------------------
# Shared by stack.sh and cluster.sh: processes, Postgres, PgBouncer, Redis and the services.

# In start order, the gateway last: it calls the other seven.
SERVICES=(auth social-graph tweets timeline notifications messaging media gateway)

# The contract's ports of a service (§4): JSON-RPC 71xx, admin HTTP 72xx.
contract_rpc_port() {
    case "$1" in
    auth) echo 7101 ;;
    tweets) echo 7102 ;;
    social-graph) echo 7103 ;;
    timeline) echo 7104 ;;
    messaging) echo 7105 ;;
    notifications) echo 7106 ;;
    media) echo 7107 ;;
    gateway) echo 7108 ;;
    *) die "unknown service $1" ;;
    esac
}

contract_admin_port() { echo $(($(contract_rpc_port "$1") + 100)); }

# Paths as the user reads them: relative to the repository.
short() { echo "${1#"$AVIARY_ROOT"/}"; }

# A process that ended but was not reaped yet (a zombie) counts as gone.
is_alive() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ $state != Z* ]]
}

is_gone() { ! is_alive "$1"; }

# Waits up to $1 seconds for the command that follows to succeed.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.3
    done
}

# Prints the pid in file $1 when that process runs (and, given $2, its command line has $2 in it).
live_pid() {
    local pid
    pid="$(head -n 1 "$1" 2>/dev/null)" || return 1
    [ -n "$pid" ] && is_alive "$pid" || return 1
    if [ -n "${2:-}" ]; then grep -qa -- "$2" "/proc/$pid/cmdline" 2>/dev/null || return 1; fi
    echo "$pid"
}

# Sends signal $2 to process $1 and waits up to $3 seconds for it to end, then SIGKILLs it (with a
# warning naming it $4, when given).
end_process() {
    kill "-$2" "$1" 2>/dev/null || true
    wait_for "$3" is_gone "$1" && return 0
    [ -z "${4:-}" ] || warn "$4 did not stop within $3 s: SIGKILL"
    kill -KILL "$1" 2>/dev/null || true
}

redis_answers() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }

# Whether a Unix socket in folder $1 is worth having: its path fits in a socket address (107
# bytes, with room for the socket's name) and needs no escaping in the URL the services get.
# Through a socket, a round trip costs both sides less CPU than over loopback TCP.
socket_folder_usable() {
    [ "${#1}" -lt 90 ] && [[ "$1" =~ ^[A-Za-z0-9/._-]+$ ]]
}

# --- Postgres: clusters of our own, run as a non-root OS user.

PG_USER=""

# Sets PG_USER, the OS user of the cluster in data folder $1: whoever owns it already; else us,
# unless we are root (Postgres refuses root), in which case the system user aviary, created if
# needed, or else nobody.
choose_pg_user() {
    if [ -d "$1" ]; then
        PG_USER="$(stat -c %U "$1")"
    elif ! is_root; then
        PG_USER="$(id -un)"
    elif ensure_system_user aviary; then
        PG_USER=aviary
    else
        warn "could not create the OS user aviary; Postgres runs as nobody"
        PG_USER=nobody
    fi
}

# Runs a command as the cluster's OS user, PG_USER (from /, since our folder may be closed to it).
as_pg() {
    if [ "$PG_USER" = "$(id -un)" ]; then
        "$@"
    else
        (cd / && as_root runuser -u "$PG_USER" -- "$@")
    fi
}

# Whether we are root and folder $1 is closed to PG_USER (a clone in /root): then Postgres's files
# go to postgres_home_elsewhere instead.
closed_to_pg_user() { is_root && ! as_pg test -x "$1"; }

# /var/lib/aviary-local/<repository hash>/$1: Postgres's files when the repository is closed to PG_USER.
postgres_home_elsewhere() {
    echo "/var/lib/aviary-local/$(printf %s "$AVIARY_ROOT" | sha256sum | cut -c1-16)/$1"
}

# Creates a cluster in data folder $1 (its parent already made and PG_USER's), role aviary,
# listening on 127.0.0.1 and in socket folder $2 ("": TCP only); initdb's output goes to file $3.
# Any role may connect from this machine without a password.
init_postgres_cluster() {
    local data="$1" socket="$2" log="$3"
    as_pg "$PG_BIN/initdb" -D "$data" -U aviary --auth=trust --encoding=UTF8 --locale=C >"$log" 2>&1 ||
        die "initdb failed, see $(short "$log")"
    as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF_CONF

# Aviary local stack: loopback only; the port is given at each start.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$socket'
EOF_CONF
    as_pg tee "$data/pg_hba.conf" >/dev/null <<'EOF_HBA'
# Aviary local stack: any role, no password, from this machine only.
local all all trust
host all all 127.0.0.1/32 trust
EOF_HBA
}

# Prints the pid of the postmaster of data folder $1 when it runs.
postmaster_pid() { live_pid "$1/postmaster.pid"; }

# --- PgBouncer: transaction pooling in front of a Postgres, as a deployment that pools many
# service processes onto few server connections runs.

# Writes folder $1's pgbouncer.ini: listening on 127.0.0.1:$4, in front of the Postgres at host $2
# (an address or a socket folder) port $3, AVIARY_LOCAL_PGBOUNCER_POOL server connections (20).
write_pgbouncer_config() {
    local dir="$1"
    mkdir -p "$dir"
    printf '"aviary" ""\n' >"$dir/users.txt"
    cat >"$dir/pgbouncer.ini" <<EOF_INI
[databases]
* = host=$2 port=$3

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $4
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = ${AVIARY_LOCAL_PGBOUNCER_POOL:-20}
max_client_conn = 4000
server_reset_query =
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF_INI
    if is_root; then chown -R "$PG_USER" "$dir"; fi
}

# Starts PgBouncer, as PG_USER, with folder $1's pgbouncer.ini, and waits for it on port $2.
start_pgbouncer_daemon() {
    as_pg /usr/sbin/pgbouncer -d "$1/pgbouncer.ini" >/dev/null ||
        die "PgBouncer did not start, see $(short "$1/pgbouncer.log")"
    wait_for 15 port_in_use "$2" || die "PgBouncer did not listen on $2, see $(short "$1/pgbouncer.log")"
}

# --- The services.

is_ready() { curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$1/readyz" 2>/dev/null; }

# Runs the command that follows $1 and $2 (a service's executable, or env VAR=... executable) in a
# session of its own, so that a Ctrl-C here or a closed terminal later does not reach it, its
# output appended to log $1 after a line naming script $2. Sets LAUNCHED_PID.
LAUNCHED_PID=""
launch_service() {
    echo "--- $(date '+%F %T') started by $2" >>"$1"
    setsid "${@:3}" >>"$1" 2>&1 </dev/null &
    LAUNCHED_PID=$!
}

# Waits up to AVIARY_LOCAL_TIMEOUT seconds (60) for service $1 (pid $2) to be ready on admin port
# $3; when it exits or is not ready by then, shows the end of its log $4 and stops with an error
# that names script $5, whose down stops the others.
await_ready() {
    local name="$1" pid="$2" admin="$3" log="$4" timeout="${AVIARY_LOCAL_TIMEOUT:-60}" state
    local deadline=$((SECONDS + timeout))
    until is_ready "$admin"; do
        if is_gone "$pid" || [ "$SECONDS" -ge "$deadline" ]; then
            is_alive "$pid" && state="not ready after ${timeout}s" || state="exited"
            printf -- '--- last lines of %s ---\n' "$(short "$log")" >&2
            tail -n 30 "$log" >&2
            die "$name $state ($5 down stops the others)"
        fi
        sleep 0.3
    done
}
