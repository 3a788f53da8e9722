#!/usr/bin/env bash
# The README's second command: install what the tests need (Docker, dig, ssh, Chromium, ...),
# build dist/berth, and run the whole suite (unit, in-process routes, end-to-end on the binary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh systemd bind9-dnsutils openssh-client chromium busybox-static debootstrap
bun run typecheck
bun run build
# The site images the end-to-end tests run (built locally, no registry; quick when present).
dist/berth images build
exec bun --bun vitest run --pool=threads "$@"
