#!/usr/bin/env bash
# Builds everything and runs the whole test suite: the one test command.
#
#   deploy/local/test.sh                     all tests, one test target after another
#   deploy/local/test.sh --filter Harness    extra arguments go to a single `swift test`
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

ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}"
ensure_swift_in_path
jobs=()
[ -n "${AVIARY_JOBS:-}" ] && jobs=(--jobs "$AVIARY_JOBS")

swift build --build-tests "${jobs[@]}"
if [ "$#" -gt 0 ]; then
    exec swift test --skip-build "$@"
fi

failed=()
for folder in Tests/*/; do
    target="$(basename "$folder")"
    [ "$target" = Support ] && continue
    say "Tests: $target"
    started=$SECONDS
    if ! swift test --skip-build --filter "^$target\\."; then
        failed+=("$target")
    fi
    say "Tests: $target took $((SECONDS - started)) s"
done
if [ "${#failed[@]}" -gt 0 ]; then
    die "failing test targets: ${failed[*]}"
fi
say "Tests: every target passed"
