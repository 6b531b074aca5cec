#!/usr/bin/env bash
# Fuzzes the JSON decoder (against Foundation's) and the RPC frame decoder under libFuzzer, with
# AddressSanitizer, for a bounded time each. Fails when either crashes or finds a difference.
#
#   deploy/local/fuzz.sh                  each target 60 s
#   deploy/local/fuzz.sh 600              each target 600 s
#   deploy/local/fuzz.sh 60 JSONFuzz      one target (JSONFuzz or FrameDecoderFuzz)
#
# The build goes to .build-fuzz (instrumented, so apart from .build; a first build takes minutes,
# later ones seconds). Each target starts from its seeds, Fuzz/Corpus/<corpus>, and the inputs
# that once crashed it, Fuzz/Regressions/<corpus>; the inputs it finds go to a temporary folder
# (AVIARY_FUZZ_CORPUS=<folder> keeps them there, to pick new seeds from). A crash's input is saved
# to .build-fuzz/crashes/<target>/ and printed in base64 at the end. Keep it in
# Fuzz/Regressions/<corpus>/ once the bug is fixed: JSONTests and RPCTests replay those files.
#
# Environment: AVIARY_JOBS limits parallel build jobs; AVIARY_FUZZ_FLAGS adds libFuzzer flags.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$AVIARY_ROOT"

seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || die "usage: deploy/local/fuzz.sh [seconds] [target…]"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(JSONFuzz FrameDecoderFuzz)

ensure_swift_in_path
scratch="$AVIARY_ROOT/.build-fuzz"
# -D FUZZING makes each target's main hand over to libFuzzer (Fuzz/Support/FuzzMain.swift).
flags=(-c debug --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
[ -n "${AVIARY_JOBS:-}" ] && flags+=(--jobs "$AVIARY_JOBS")

corpus_of() {
    case "$1" in
        JSONFuzz) echo json ;;
        FrameDecoderFuzz) echo frames ;;
        *) die "no fuzz target $1 (JSONFuzz, FrameDecoderFuzz)" ;;
    esac
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
    corpus_of "$target" >/dev/null
    say "Fuzz: building $target"
    started=$SECONDS
    status=0
    swift build "${flags[@]}" --product "$target" >"$work/build.log" 2>&1 || status=$?
    # ld.gold warns of each AddressSanitizer symbol it cannot export; those lines are noise.
    grep -v "Cannot export local symbol" "$work/build.log" || true
    [ "$status" -eq 0 ] || die "the fuzz build of $target failed"
    say "Fuzz: built $target in $((SECONDS - started)) s"
done
bin="$(swift build "${flags[@]}" --show-bin-path)"

failed=()
for target in "${targets[@]}"; do
    corpus="$(corpus_of "$target")"
    found="${AVIARY_FUZZ_CORPUS:-$work}/$corpus"
    crashes="$scratch/crashes/$target"
    mkdir -p "$found" "$crashes"
    seeds=(Fuzz/Corpus/"$corpus")
    [ -d Fuzz/Regressions/"$corpus" ] && seeds+=(Fuzz/Regressions/"$corpus")
    say "Fuzz: $target for $seconds s from ${seeds[*]}"
    # Swift's backtracer would take the crash signals AddressSanitizer and libFuzzer report on.
    # shellcheck disable=SC2086
    if ! SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$bin/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$crashes/" ${AVIARY_FUZZ_FLAGS:-} "$found" "${seeds[@]}" 2>"$work/$target.log"; then
        # What failed (a difference is a Swift fatal error; a memory error AddressSanitizer's report).
        grep -E -A 4 'Fatal error|ERROR: AddressSanitizer|ERROR: libFuzzer' "$work/$target.log" | head -n 40 || true
        grep -E '^(SUMMARY|MS:|artifact_prefix)' "$work/$target.log" || true
        failed+=("$target")
        for input in "$crashes"/*; do
            [ -f "$input" ] && say "Fuzz: $target failed on $input: $(base64 -w0 "$input")"
        done
        continue
    fi
    # The last status line (executions, coverage, corpus) and the totals.
    grep -E '^#[0-9]+' "$work/$target.log" | tail -n 1
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$work/$target.log"
done
[ "${#failed[@]}" -eq 0 ] || die "fuzzing found crashes in: ${failed[*]}"
say "Fuzz: no crash in ${targets[*]}, $seconds s each"
