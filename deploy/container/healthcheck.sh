#!/bin/bash
# The container HEALTHCHECK: GET /readyz on the service's admin port over bash's /dev/tcp (the
# slim image has no curl). Healthy on HTTP 200, that is, once Postgres and Redis are reachable and
# migrations ran. The port is $AVIARY_ADMIN_PORT, else the contract's default for the executable
# running as process 1.
set -u
port="${AVIARY_ADMIN_PORT:-}"
if [ -z "$port" ]; then
    command="$(tr '\0' '\n' </proc/1/cmdline | head -n 1)"
    case "${command##*/}" in
    aviary-auth) port=7201 ;;
    aviary-tweets) port=7202 ;;
    aviary-social-graph) port=7203 ;;
    aviary-timeline) port=7204 ;;
    aviary-messaging) port=7205 ;;
    aviary-notifications) port=7206 ;;
    aviary-media) port=7207 ;;
    aviary-gateway) port=7208 ;;
    *) echo "not an Aviary service: ${command:-unknown}" >&2; exit 1 ;;
    esac
fi
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
IFS=$' \r' read -r -t 5 _ status _ <&3 || exit 1
[ "$status" = 200 ] || { echo "readyz: HTTP $status" >&2; exit 1; }
