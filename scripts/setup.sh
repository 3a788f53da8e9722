#!/usr/bin/env bash
# Installs what Berth needs on Debian 12 with only Node and npm: Bun (pinned, from npm), the
# project's packages, and Docker's engine (Debian's docker.io, started when not running).
# Idempotent: a second run only checks. Used by scripts/start.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

BUN_VERSION="$(node -p "require('./package.json').engines.bun")"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

if ! command -v bun >/dev/null 2>&1 || [ "$(bun --version)" != "$BUN_VERSION" ]; then
  echo "setup: installing bun $BUN_VERSION from npm"
  $SUDO npm install -g --no-fund --no-audit "bun@$BUN_VERSION" >/dev/null
fi

apt_packages=()
command -v dockerd >/dev/null 2>&1 || apt_packages+=(docker.io)
for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || apt_packages+=("$p"); done
if [ "${#apt_packages[@]}" -gt 0 ]; then
  echo "setup: apt-get install ${apt_packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

# Start Docker's engine when it is not answering: through systemd where it runs, else directly,
# in a session of its own (setsid -f), so that neither this script's end, its terminal nor a
# signal to its process group stops it (the solo test tier restarts it the same way:
# test/helpers/dockerd.ts).
if ! docker info >/dev/null 2>&1; then
  if [ -d /run/systemd/system ] && $SUDO systemctl start docker >/dev/null 2>&1; then :; else
    echo "setup: starting dockerd"
    $SUDO mkdir -p /var/log
    $SUDO sh -c 'setsid -f dockerd >>/var/log/dockerd.log 2>&1 </dev/null'
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "setup: dockerd did not start; see /var/log/dockerd.log" >&2; exit 1; }
fi

bun install --frozen-lockfile >/dev/null
