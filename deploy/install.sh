#!/usr/bin/env bash
# Installs Aviary on this host for systemd: the binaries of dist/bin (deploy/build-release.sh makes
# them) into /usr/local/bin, the units into /etc/systemd/system, the example settings into
# /etc/aviary (an existing file is never overwritten), the `aviary` user, and /var/lib/aviary/media.
# It starts nothing; it prints the command that does.
#
#   sudo deploy/install.sh                   install on this host
#   deploy/install.sh --root DIR [--bin DIR] install into DIR instead of / (packaging and tests:
#                                            no user is created, nothing is chowned or reloaded)
set -euo pipefail
# shellcheck source=local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"
DEPLOY="$AVIARY_ROOT/deploy"

ROOT=/
BIN="$AVIARY_ROOT/dist/bin"
while [ $# -gt 0 ]; do
    case "$1" in
    --root) ROOT="${2:?--root needs a folder}"; shift 2 ;;
    --bin) BIN="${2:?--bin needs a folder}"; shift 2 ;;
    *) die "usage: deploy/install.sh [--root DIR] [--bin DIR]" ;;
    esac
done
ROOT="${ROOT%/}"
EXECUTABLES=(aviary-auth aviary-tweets aviary-social-graph aviary-timeline aviary-messaging aviary-notifications
    aviary-media aviary-gateway aviary)
SERVICES=(auth tweets social-graph timeline messaging notifications media gateway)

on_this_host() { [ -z "$ROOT" ]; }

for executable in "${EXECUTABLES[@]}"; do
    [ -x "$BIN/$executable" ] || die "$BIN/$executable is missing: run deploy/build-release.sh first"
done
if on_this_host && ! is_root; then die "run it as root (sudo deploy/install.sh)"; fi

# A system user that owns nothing but the media folder; the units run every service as it.
if on_this_host && ! getent passwd aviary >/dev/null; then
    say "Creating the system user aviary"
    useradd --system --user-group --home-dir /var/lib/aviary --no-create-home --shell /usr/sbin/nologin aviary
fi

say "Binaries -> $ROOT/usr/local/bin"
install -d -m 0755 "$ROOT/usr/local/bin"
for executable in "${EXECUTABLES[@]}"; do
    install -m 0755 "$BIN/$executable" "$ROOT/usr/local/bin/$executable"
done

say "Units -> $ROOT/etc/systemd/system"
install -d -m 0755 "$ROOT/etc/systemd/system"
install -m 0644 "$DEPLOY/systemd/aviary.target" "$DEPLOY"/systemd/aviary-*.service "$ROOT/etc/systemd/system/"

# Settings hold secrets: readable by root and the aviary group only. Edited files are kept.
say "Settings -> $ROOT/etc/aviary"
install -d -m 0750 "$ROOT/etc/aviary"
on_this_host && chgrp aviary "$ROOT/etc/aviary"
for file in "$DEPLOY"/systemd/env/*.env; do
    target="$ROOT/etc/aviary/$(basename "$file")"
    if [ -e "$target" ]; then
        say "  kept $target"
        continue
    fi
    install -m 0640 "$file" "$target"
    on_this_host && chgrp aviary "$target"
done

say "Media folder -> $ROOT/var/lib/aviary/media"
install -d -m 0755 "$ROOT/var/lib/aviary"
install -d -m 0750 "$ROOT/var/lib/aviary/media"
on_this_host && chown aviary:aviary "$ROOT/var/lib/aviary/media"

install -d -m 0755 "$ROOT/usr/local/share/doc/aviary"
install -m 0644 "$DEPLOY/README.md" "$ROOT/usr/local/share/doc/aviary/README.md"
[ -f "$BIN/../BUILD-INFO" ] && install -m 0644 "$BIN/../BUILD-INFO" "$ROOT/usr/local/share/doc/aviary/BUILD-INFO"

if on_this_host && [ -d /run/systemd/system ]; then
    systemctl daemon-reload
fi

units=()
for service in "${SERVICES[@]}"; do units+=("aviary-$service.service"); done
say ""
say "Installed. Review /etc/aviary/*.env (secrets: deploy/README.md), then:"
say "  systemctl enable --now aviary.target ${units[*]}"
