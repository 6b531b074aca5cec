# Shared by stack.sh, test.sh and .ci/run (sourced, not run). Bash.

AVIARY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# What building, testing and running Aviary needs from Debian.
AVIARY_APT_PACKAGES=(
    postgresql postgresql-contrib redis-server libpq-dev libhiredis-dev libargon2-dev libjemalloc-dev libcurl4-openssl-dev pkg-config curl
    procps openssl pgbouncer
)

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
