#!/usr/bin/env bash
# Runs the unit-level test targets (the shared libraries' own tests, against a real Postgres and
# Redis) built with ThreadSanitizer. Fails when a test fails or ThreadSanitizer reports anything.
#
#   deploy/local/tsan.sh                     every unit-level target
#   deploy/local/tsan.sh RedisTests          the targets named
#   deploy/local/tsan.sh --build-only        builds them and stops (.ci/run, beside the tests)
#
# The build goes to .build-tsan (instrumented, so apart from .build) and holds only the targets
# named and what they depend on (AVIARY_TEST_TARGETS, read by Package.swift): not the services,
# the gateway or the command-line tool. A first build takes about half as long as a plain one,
# later ones seconds. Values threads share are behind `Locked` (Shared/Locking),
# on pthread's mutex, which ThreadSanitizer sees; `Synchronization.Mutex` waits on a futex it does
# not, and would make every value behind it a race. Reports of the Swift runtime's continuation
# hand-off are left out (deploy/local/tsan-suppressions.txt). Each report's text is kept in
# .build-tsan/reports/<target>.<pid> and printed after its target. Set AVIARY_JOBS to limit build jobs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$AVIARY_ROOT"

build_only=false
if [ "${1:-}" = --build-only ]; then
    build_only=true
    shift
fi
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(JSONTests RPCTests PostgresTests RedisTests EventsTests ServiceKitTests)

ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}"
ensure_swift_in_path
scratch="$AVIARY_ROOT/.build-tsan"
# The whole package's versions, resolved first and then only read: resolving the cut package would
# rewrite Package.resolved without the packages it leaves out, under other builds of the package.
env -u AVIARY_TEST_TARGETS swift package resolve --scratch-path "$scratch"
AVIARY_TEST_TARGETS="$(IFS=,; echo "${targets[*]}")"
export AVIARY_TEST_TARGETS
flags=(--scratch-path "$scratch" --sanitize=thread --force-resolved-versions)
[ -n "${AVIARY_JOBS:-}" ] && flags+=(--jobs "$AVIARY_JOBS")

say "TSan: building"
started=$SECONDS
swift build --build-tests "${flags[@]}"
say "TSan: built in $((SECONDS - started)) s"
$build_only && exit 0

# Reports of the Swift runtime's continuation hand-off, which are not races (the file says why).
suppressions="$AVIARY_ROOT/deploy/local/tsan-suppressions.txt"
reports="$scratch/reports"
rm -rf "$reports"
mkdir -p "$reports"
failed=()
for target in "${targets[@]}"; do
    say "TSan: $target"
    started=$SECONDS
    passed=true
    # A report does not stop the run; each goes to its own file, and any file fails the target.
    TSAN_OPTIONS="log_path=$reports/$target halt_on_error=0 second_deadlock_stack=1 suppressions=$suppressions" \
        swift test --skip-build "${flags[@]}" --filter "^$target\\." || passed=false
    if compgen -G "$reports/$target.*" >/dev/null; then
        cat "$reports/$target".*
        say "TSan: $target: $(cat "$reports/$target".* | grep -c '^WARNING: ThreadSanitizer') reports"
        passed=false
    fi
    $passed || failed+=("$target")
    say "TSan: $target took $((SECONDS - started)) s"
done
[ "${#failed[@]}" -eq 0 ] || die "ThreadSanitizer: failing targets: ${failed[*]}"
say "TSan: every target passed, no reports"
