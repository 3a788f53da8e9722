#!/usr/bin/env bash
# The README's second command: install what the tests need (Docker, dig, ssh, Chromium, ...),
# build dist/berth, and run the whole suite: the unit, service and end-to-end tiers.
#
#   scripts/test.sh                 every tier (CI runs this)
#   scripts/test.sh unit [args]     only the unit tier: no Docker, no build (bun, root, tar, du, ssh-keygen)
#   scripts/test.sh service [args]  only the service tier: in-process on real Docker
#   scripts/test.sh e2e [args]      only the end-to-end tier: the compiled binary on real Docker,
#                                   then its solo part (tests that restart the Docker engine)
# Other arguments go to vitest: scripts/test.sh src/api/keys
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
case "${1:-}" in
  unit|service|e2e) tier=(--project "$1"); shift ;;
esac
if [ "${tier[*]}" = "--project unit" ]; then
  [ -d node_modules ] || bun install --frozen-lockfile
  exec bun --bun vitest run --pool=threads "${tier[@]}" "$@"
fi
# debootstrap also makes the systemd host of test/systemd-unit.solo.e2e.test.ts; util-linux (unshare,
# mount: essential on Debian) hides busybox from one images test. age opens the off-box copies by hand
# (test/offsite*.e2e.test.ts), as a hoster would. tmux and bsdutils' script give berth sites shell
# a terminal (test/sites-shell.e2e.test.ts). prometheus (with promtool) scrapes Berth's /metrics
# (test/prometheus.e2e.test.ts). nghttp2-client's h2load loads the HTTPS edge over HTTP/2
# (test/https-edge.e2e.test.ts, bench/h2.ts). iproute2 (ip netns, veths) and util-linux's nsenter and
# unshare make the two-node cluster lab (test/lab/), whose nodes are asked with curl. python3 reads the
# OpenAPI document's patterns as Python tools do (src/api/openapi-patterns.test.ts). openssh-server's
# sshd (never started as a service) is the SSH side of the tests' git server (test/helpers/git-server.ts).
scripts/setup.sh systemd bind9-dnsutils openssh-client chromium busybox-static debootstrap pebble openssl age tmux bsdutils prometheus nghttp2-client iproute2 curl python3 openssh-server
bun run typecheck
bun run build
# The site images the service and end-to-end tests run (built locally, no registry; quick when present).
dist/berth images build
# The WordPress drill (test/wordpress.e2e.test.ts) deploys Debian's wordpress package files: the
# .debs are fetched once with apt-get download into .cache/debs/ (never installed on the host).
mkdir -p .cache/debs && (cd .cache/debs && for p in wordpress wordpress-theme-twentytwentyone php-getid3 libjs-underscore libjs-cropper; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1 || { echo "test: apt-get download $p failed" >&2; exit 1; }
done)
if [ $# -gt 0 ]; then
  # Files or filters named: one run, with any tier they belong to.
  exec bun --bun vitest run --pool=threads "${tier[@]}" "$@"
fi
case "${tier[*]}" in
  "--project service") exec bun --bun vitest run --pool=threads --project service ;;
  "--project e2e") bun --bun vitest run --pool=threads --project e2e ;;
  *) bun --bun vitest run --pool=threads --project unit --project service --project e2e ;;
esac
# The solo tier disturbs the whole machine (it restarts the Docker engine; Berth under systemd on
# the host network, restarted and upgraded under a request loop that must lose nothing), so it runs
# last, one file at a time.
exec bun --bun vitest run --pool=threads --project solo
