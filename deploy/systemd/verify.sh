#!/usr/bin/env bash
# Checks the systemd units offline, as CI runs it (no running systemd needed, root not needed):
#   1. the units are what generate.sh writes;
#   2. every example settings file holds only comments and AVIARY_*=value lines;
#   3. install.sh installs everything into a scratch root (placeholder binaries stand in for dist/bin);
#   4. `systemd-analyze verify` passes on every unit there, templates through an instance, with no
#      warning at all (verify itself only fails on errors; unknown keys are mere warnings);
#   5. every service unit keeps the directives the deployment relies on (notify, watchdog, user,
#      hardening), and `systemd-analyze security` rates it at most $AVIARY_MAX_EXPOSURE (default 1.5,
#      what systemd 252 gives these units; dropping any one hardening line raises it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../local/lib.sh
source "$HERE/../local/lib.sh"

MAX_EXPOSURE="${AVIARY_MAX_EXPOSURE:-1.5}"
REQUIRED=(
    Type=notify NotifyAccess=main WatchdogSec=30 Restart=on-failure User=aviary TimeoutStopSec=15
    EnvironmentFile=/etc/aviary/common.env NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" SystemCallFilter=@system-service
)
SERVICES=(auth tweets social-graph timeline messaging notifications media gateway)

say "--- units are generated"
"$HERE/generate.sh" --check

say "--- settings files"
bad=0
for file in "$HERE"/env/*.env; do
    if grep -nvE '^(#.*|[[:space:]]*|AVIARY_[A-Z0-9_]+=.*)$' "$file"; then
        warn "$(basename "$file"): lines above are neither comments nor AVIARY_*=value"
        bad=1
    fi
done
[ "$bad" -eq 0 ] || die "settings files are malformed"

command -v systemd-analyze >/dev/null 2>&1 || ensure_apt_packages systemd
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

say "--- install.sh into a scratch root"
mkdir -p "$scratch/bin"
for executable in "${SERVICES[@]/#/aviary-}" aviary; do
    printf '#!/bin/sh\nexit 0\n' >"$scratch/bin/$executable"
    chmod 0755 "$scratch/bin/$executable"
done
"$HERE/../install.sh" --root "$scratch/root" --bin "$scratch/bin" >/dev/null
# With --root, systemd-analyze loads units from the root only, so it needs systemd's own
# (sysinit.target, basic.target, ...) there too.
mkdir -p "$scratch/root/usr/lib/systemd"
for system_units in /usr/lib/systemd/system /lib/systemd/system ""; do
    [ -e "$system_units/sysinit.target" ] && break
done
[ -n "$system_units" ] || die "systemd's own units (sysinit.target) are not installed"
cp -a "$system_units" "$scratch/root/usr/lib/systemd/system"

units=(aviary.target)
for service in "${SERVICES[@]}"; do
    units+=("aviary-$service.service" "aviary-$service@1.service")
done

say "--- systemd-analyze verify (${#units[@]} units)"
if ! output="$(systemd-analyze verify --man=no --root="$scratch/root" "${units[@]}" 2>&1)" || [ -n "$output" ]; then
    printf '%s\n' "$output" >&2
    die "systemd-analyze verify reported the problems above"
fi

say "--- required directives"
for file in "$HERE"/aviary-*.service; do
    name="$(basename "$file" .service)"
    name="${name#aviary-}"
    for line in "${REQUIRED[@]}" "EnvironmentFile=/etc/aviary/${name%@}.env"; do
        grep -qxF "$line" "$file" || { warn "$(basename "$file") lacks $line"; bad=1; }
    done
    if [[ $name == media* ]] ; then
        grep -qxF ReadWritePaths=/var/lib/aviary/media "$file" || { warn "$(basename "$file") cannot write media"; bad=1; }
    elif grep -q '^ReadWritePaths=' "$file"; then
        warn "$(basename "$file") may write somewhere; only media may"
        bad=1
    fi
done
[ "$bad" -eq 0 ] || die "units lack required directives"

say "--- systemd-analyze security (at most $MAX_EXPOSURE)"
failed=0
for unit in "${units[@]}"; do
    [[ $unit == *.service ]] || continue
    score="$(systemd-analyze security --offline=true --root="$scratch/root" --no-pager "$unit" 2>/dev/null |
        sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')"
    if [ -z "$score" ] || ! awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }'; then
        warn "$unit: exposure ${score:-unknown}, above $MAX_EXPOSURE"
        failed=1
    else
        say "  $unit: $score"
    fi
done
[ "$failed" -eq 0 ] || die "a unit lost some of its hardening"
say "systemd units OK"
