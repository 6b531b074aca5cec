#!/usr/bin/env bash
# Builds everything and runs the whole test suite: the one test command.
#
#   deploy/local/test.sh                     all tests
#   deploy/local/test.sh --filter Harness    extra arguments go to `swift test`
#
# The tests start their own Postgres and Redis (random ports, temporary folders), so this only
# installs the programs. Set AVIARY_JOBS to limit parallel build jobs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$AVIARY_ROOT"

ensure_apt_packages "${AVIARY_APT_PACKAGES[@]}"
ensure_swift_in_path
jobs=()
[ -n "${AVIARY_JOBS:-}" ] && jobs=(--jobs "$AVIARY_JOBS")

swift build --build-tests "${jobs[@]}"
swift test "${jobs[@]}" "$@"
