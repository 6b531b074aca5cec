#!/usr/bin/env bash
# Builds the release binaries of the seven services, the gateway and the `aviary` tool with the
# Swift standard library (and Foundation) linked statically, copies them to dist/bin/, and checks
# with readelf and ldd that a host needs nothing but the shared libraries allowed below.
#
#   deploy/build-release.sh                build, copy to dist/, check
#   deploy/build-release.sh --check-only   only check the binaries already in dist/bin
#
# Output (dist/ is git-ignored):
#   dist/bin/<executable>      stripped binaries, ready for /usr/local/bin or a container image
#   dist/debug/<exe>.debug     their debug information (gdb and lldb find it by the debuglink)
#   dist/BUILD-INFO            version, git revision, Swift version, build time
#   dist/SHA256SUMS            checksums of dist/bin
#
# Environment:
#   AVIARY_BUILD_PATH     SwiftPM scratch folder (default .build-release-static in the package), kept
#                         apart from .build so that release and debug builds never wait on each other
#   AVIARY_JOBS           parallel build jobs (default: SwiftPM's choice; use 2 on a shared machine)
#   AVIARY_REVISION       the git revision to record (default: `git describe` of the package)
#   AVIARY_PACKAGE_PATH   the Swift package to build (default: this repository)
set -euo pipefail
# shellcheck source=local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

PACKAGE="$(cd "${AVIARY_PACKAGE_PATH:-$AVIARY_ROOT}" && pwd)"
DIST="$PACKAGE/dist"
BUILD_PATH="${AVIARY_BUILD_PATH:-$PACKAGE/.build-release-static}"

SERVICES=(aviary-auth aviary-tweets aviary-social-graph aviary-timeline aviary-messaging aviary-notifications
    aviary-media aviary-gateway)
EXECUTABLES=("${SERVICES[@]}" aviary)

# What building needs from Debian: the C libraries' headers, and libcurl's for the static
# FoundationNetworking (auth fetches Google's signing keys with URLSession), which links -lcurl.
BUILD_APT_PACKAGES=(libpq-dev libhiredis-dev libargon2-dev libjemalloc-dev libcurl4-openssl-dev pkg-config binutils)

# The shared libraries a binary may need directly (its DT_NEEDED entries), and why:
#   glibc, which every Linux program links: libc, libm, libpthread, libdl, librt, libutil, the dynamic
#     loader ld-linux-*, and the kernel's linux-vdso (ldd shows it, no file backs it);
#   libstdc++ and libgcc_s: the Swift runtime is C++ and unwinds with libgcc, and
#     `--static-swift-stdlib` links them dynamically by design (static-stdlib-args.lnk: -lstdc++);
#     both are in every Debian base image, since apt itself needs them;
#   libpq (Postgres), libhiredis 0.14 (Redis), libargon2 (password hashes): the C libraries Aviary
#     wraps; libjemalloc: the services' allocator;
#   libcurl: only in aviary-auth, through the static FoundationNetworking (URLSession), which Swift
#     ships without curl.
#   libz (zlib): aviary-auth and the aviary tool, through ZIPFoundation (data exports); Debian's
#     zlib1g is of required priority, in every base image.
# Crypto needs nothing: swift-crypto builds its own BoringSSL into the binary.
ALLOWED_NEEDED=(
    linux-vdso.so.1 'ld-linux-*.so.*' libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1
    libstdc++.so.6 libgcc_s.so.1
    libpq.so.5 libhiredis.so.0.14 libargon2.so.1 libjemalloc.so.2 libcurl.so.4 libz.so.1
)
# Allowed libraries whose own dependencies may appear in ldd's (transitive) output: libpq brings
# OpenSSL, Kerberos and LDAP, libcurl brings more of the same. The Debian packages libpq5 and
# libcurl4 install them, so a host that has those packages has these.
LIBRARIES_WITH_DEPENDENCIES=(libpq.so.5 libhiredis.so.0.14 libargon2.so.1 libjemalloc.so.2 libcurl.so.4)

is_allowed() {
    local name="$1" pattern
    for pattern in "${ALLOWED_NEEDED[@]}"; do
        # shellcheck disable=SC2053 # the pattern is a glob on purpose
        [[ $name == $pattern ]] && return 0
    done
    return 1
}

# Prints "name path" for each line of `ldd file` (path is "-" for the vdso, "not-found" when missing).
ldd_entries() {
    ldd "$1" | awk '
        /=> not found/ { print $1, "not-found"; next }
        /=>/ { print $1, ($3 == "" ? "-" : $3); next }
        NF >= 1 { n = split($1, parts, "/"); print parts[n], $1 }'
}

# Fails (returns 1, printing why) when `file` needs a library outside the allowed set.
check_libraries() {
    local file="$1" name path failed=0 dependency
    local -a needed=()
    local -A closure=()
    mapfile -t needed < <(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for name in "${needed[@]}"; do
        if ! is_allowed "$name"; then
            warn "$(basename "$file") links $name directly, which is not allowed"
            failed=1
        fi
    done
    while read -r name path; do
        if [[ " ${LIBRARIES_WITH_DEPENDENCIES[*]} " == *" $name "* && -f $path ]]; then
            while read -r dependency _; do closure[$dependency]=1; done < <(ldd_entries "$path")
        fi
    done < <(ldd_entries "$file")
    while read -r name path; do
        if [ "$path" = not-found ]; then
            warn "$(basename "$file") needs $name, which this machine does not have"
            failed=1
        elif [[ $name == libswift* || $name == libFoundation* || $name == lib_Foundation* ||
            $name == libdispatch* || $name == libBlocksRuntime* || $path == */swift/* ]]; then
            warn "$(basename "$file") loads the Swift runtime library $name ($path): not statically linked"
            failed=1
        elif ! is_allowed "$name" && [ -z "${closure[$name]:-}" ]; then
            warn "$(basename "$file") loads $name ($path), which no allowed library explains"
            failed=1
        fi
    done < <(ldd_entries "$file")
    [ "$failed" -eq 0 ] && say "  $(basename "$file"): ${needed[*]}"
    return "$failed"
}

# The version the services report, read from the source instead of duplicated here.
source_version() {
    sed -n 's/.*static let version = "\(.*\)".*/\1/p' "$PACKAGE/Shared/ServiceKit/Application/AviaryVersion.swift" \
        2>/dev/null || true
}

# Each service prints `<name> <version> (<revision>)`, the revision being the one BUILD-INFO records.
check_versions() {
    local version="$1" executable output expected failed=0 revision
    [ -n "$version" ] || return 0
    revision="$(sed -n 's/^revision=//p' "$DIST/BUILD-INFO" 2>/dev/null)"
    for executable in "${SERVICES[@]}"; do
        output="$("$DIST/bin/$executable" --version 2>&1 || true)"
        expected="$executable $version (${revision:-unknown})"
        if [ "$output" != "$expected" ]; then
            warn "$executable --version printed '$output', expected '$expected'"
            failed=1
        fi
    done
    return "$failed"
}

build() {
    local jobs=() bin executable revision
    [ -n "${AVIARY_JOBS:-}" ] && jobs=(--jobs "$AVIARY_JOBS")
    ensure_swift_in_path
    if command -v dpkg-query >/dev/null 2>&1; then
        ensure_apt_packages "${BUILD_APT_PACKAGES[@]}"
    fi
    cd "$PACKAGE"
    revision="${AVIARY_REVISION:-$(git -C "$PACKAGE" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)}"
    # Package.swift builds it into every binary (`--version`, `system.health`).
    export AVIARY_REVISION="$revision"
    local flags=(-c release --static-swift-stdlib --scratch-path "$BUILD_PATH")
    say "--- swift build ${flags[*]} ${jobs[*]}"
    swift build "${flags[@]}" "${jobs[@]}"
    bin="$(swift build "${flags[@]}" --show-bin-path)"

    rm -rf "${DIST:?}/bin" "${DIST:?}/debug"
    mkdir -p "$DIST/bin" "$DIST/debug"
    for executable in "${EXECUTABLES[@]}"; do
        # Debug information goes to its own file, linked by name, so that crash backtraces can be
        # symbolicated without shipping it.
        objcopy --only-keep-debug "$bin/$executable" "$DIST/debug/$executable.debug"
        objcopy --strip-debug --add-gnu-debuglink="$DIST/debug/$executable.debug" \
            "$bin/$executable" "$DIST/bin/$executable"
        chmod 0755 "$DIST/bin/$executable"
    done

    {
        echo "version=$(source_version)"
        echo "revision=$revision"
        echo "swift=$(swift --version 2>/dev/null | head -n 1)"
        echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$DIST/BUILD-INFO"
    (cd "$DIST/bin" && sha256sum "${EXECUTABLES[@]}") >"$DIST/SHA256SUMS"
}

check() {
    local executable failed=0
    say "--- shared libraries each binary links"
    for executable in "${EXECUTABLES[@]}"; do
        [ -x "$DIST/bin/$executable" ] || die "$DIST/bin/$executable is missing: run deploy/build-release.sh"
        check_libraries "$DIST/bin/$executable" || failed=1
    done
    say "--- --version"
    check_versions "$(source_version)" || failed=1
    [ "$failed" -eq 0 ] || die "the release binaries need more than the allowed libraries (see above)"
    say "--- dist/"
    du -h "$DIST/bin/"* | sed "s|$PACKAGE/||"
    [ -f "$DIST/BUILD-INFO" ] && cat "$DIST/BUILD-INFO"
    return 0
}

# `build; check`, not `build && check`: bash ignores `set -e` inside a function that runs on the
# left of `&&`, so a failed compile would go on to copy binaries that do not exist.
case "${1:-}" in
"")
    build
    check
    ;;
--check-only) check ;;
*) die "usage: deploy/build-release.sh [--check-only]" ;;
esac
