#!/usr/bin/env bash
# Builds everything and runs the whole test suite: the one test command.
#
#   deploy/local/test.sh                     all tests, one test target after another
#   deploy/local/test.sh --filter Harness    with --filter, the arguments go to a single `swift test`
#   deploy/local/test.sh --skip-build        other arguments go to each target's `swift test`
#
# The tests start their own Postgres and Redis (random ports, temporary folders), so this only
# installs the programs. Set AVIARY_JOBS to limit parallel build jobs.
#
# Tests within a target run in parallel; the targets run one after another. The service suites
# each start several real service processes (up to fifteen for the scaling test), and all of them
# at once would overload a small machine until calls time out.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$AVIARY_ROOT"

ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}" "${AVIARY_TEST_APT_PACKAGES[@]}"
ensure_swift_in_path
jobs=()
[ -n "${AVIARY_JOBS:-}" ] && jobs=(--jobs "$AVIARY_JOBS")

swift build --build-tests "${jobs[@]}"
# Tests picked with --filter run in one `swift test`; all of them at once would overload the machine.
for argument in "$@"; do
    case "$argument" in
        --filter | --filter=*) exec swift test --skip-build "$@" ;;
    esac
done

# A target still running after this many seconds has hung (a whole target takes a minute or two):
# it fails with what it was doing, instead of holding CI until CI's own time runs out.
target_limit="${AVIARY_TEST_TARGET_TIMEOUT:-900}"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# Runs one test target under the watchdog, its output shown and kept in $logs/<target>.
run_target() {
    local target="$1" log="$logs/$1" pid waited=0
    shift
    # In a process group of its own (job control on), so that all of it can be killed at once.
    set -m
    (
        set -o pipefail
        # Line-buffered, so the log is up to date when the watchdog reads it.
        stdbuf -oL -eL swift test --skip-build --filter "^$target\\." "$@" 2>&1 | tee "$log"
    ) &
    pid=$!
    set +m
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge "$target_limit" ]; then
            report_hang "$target" "$log"
            kill -KILL -- "-$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$pid"
}

# Which tests of a hung target started and never finished, and the stacks of the test process's
# threads that are in Aviary's code (a task suspended on an await is on no thread's stack).
report_hang() {
    local target="$1" log="$2" process
    say "Tests: $target still runs after $target_limit s. Tests that started and did not finish:"
    awk '/^◇ Test [^ ]+ started\./ && $3 != "run" { running[$3] = 1 }
        /^[✔✘] Test [^ ]+ .*(passed|failed) after/ { delete running[$3] }
        END { for (name in running) print "  " name }' "$log"
    ensure_apt_packages gdb >/dev/null || return 0
    for process in $(pgrep -f 'PackageTests\.xctest' || true); do
        say "Threads of the test process in Aviary's code:"
        gdb -p "$process" -batch -ex 'thread apply all bt 40' 2>/dev/null |
            awk '/^Thread / { if (ours) printf "%s", block; block = ""; ours = 0 }
                /^(Thread|#)/ { block = block $0 "\n" }
                / at [^ ]*\/(Shared|Services|Tests)\// && !/PostgresReactor.swift/ { ours = 1 }
                END { if (ours) printf "%s", block }'
    done
}

failed=()
for folder in Tests/*/; do
    target="$(basename "$folder")"
    [ "$target" = Support ] && continue
    say "Tests: $target"
    started=$SECONDS
    if ! run_target "$target" "$@"; then
        failed+=("$target")
    fi
    say "Tests: $target took $((SECONDS - started)) s"
done
# The end-to-end suite (every public call through the gateway) again on the clustered topology of
# deploy/local/cluster.sh: a Redis Cluster, a Postgres primary with a read replica behind PgBouncer,
# two instances of every service (AVIARY_TEST_TOPOLOGY, ServiceStack+Topology.swift).
say "Tests: GatewayTests on the cluster topology"
started=$SECONDS
if ! AVIARY_TEST_TOPOLOGY=cluster run_target GatewayTests "$@"; then
    failed+=("GatewayTests (cluster topology)")
fi
say "Tests: GatewayTests on the cluster topology took $((SECONDS - started)) s"
if [ "${#failed[@]}" -gt 0 ]; then
    die "failing test targets: ${failed[*]}"
fi
say "Tests: every target passed"
