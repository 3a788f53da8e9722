#!/usr/bin/env bash
# The README's first command: install what is needed, build dist/berth and serve the embedded
# default on http://localhost:8080 (data in ./.berth-data). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh busybox-static debootstrap
bun run build
# Site images are built locally (no registry); a no-op when they exist.
dist/berth images build
exec dist/berth serve "$@"
