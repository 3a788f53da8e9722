#!/bin/sh
# Berth's in-container agent: writes a claim token into the site user's home.
#
#   sh -c "$(cat claim-token.sh)" berth-agent PREFIX TOKEN
#
# Berth runs it on demand through the engine (docker exec), as the site user (uid 1000), in
# every site image (busybox ash in berth/static, dash in berth/php): nothing stays running, so an
# idle site pays nothing for it. It writes TOKEN to ~/.PREFIX/.claim_token, mode 600, and never
# writes through a symbolic link:
# - ~/.PREFIX itself a symbolic link: refused (exit 3); the tenant removes it and asks again;
# - ~/.PREFIX/.claim_token a symbolic link (or anything but a file): replaced, not followed. The
#   token goes to a fresh file made by mktemp (O_EXCL) and is renamed over the name: rename(2)
#   replaces a directory entry and never follows it.
# Exit status: 0 written, 2 bad arguments, 3 refused (message on stderr), 4 no home.
set -eu
[ "$#" -eq 2 ] || { echo "usage: berth-agent PREFIX TOKEN" >&2; exit 2; }
prefix=$1
token=$2
case $prefix in ''|*[!a-z0-9]*) echo "bad prefix" >&2; exit 2 ;; esac
case $token in ''|*[!a-z0-9_]*) echo "bad token" >&2; exit 2 ;; esac
umask 077
cd -P "${HOME:-/home/site}" 2>/dev/null || { echo "no home folder" >&2; exit 4; }
home=$(pwd -P)
dir=".$prefix"
if [ -L "$dir" ]; then
  echo "~/$dir is a symbolic link; remove it (rm ~/$dir) and request the claim again" >&2
  exit 3
fi
if [ ! -d "$dir" ]; then
  [ -e "$dir" ] && { echo "~/$dir exists and is not a folder; remove it and request the claim again" >&2; exit 3; }
  mkdir -m 700 "$dir"
fi
cd -P "$dir"
# Pinned to the folder itself: if it was swapped for a link between the test and the cd, stop.
[ "$(pwd -P)" = "$home/$dir" ] || { echo "~/$dir moved while the token was being written; request the claim again" >&2; exit 3; }
chmod 700 .
tmp=$(mktemp .claim_token.XXXXXX)
printf '%s\n' "$token" >"$tmp"
chmod 600 "$tmp"
# A folder at the name would take the file inside it; a link or file is replaced by the rename.
if [ -d .claim_token ] && [ ! -L .claim_token ]; then
  rm -f "$tmp"
  echo "~/$dir/.claim_token is a folder; remove it and request the claim again" >&2
  exit 3
fi
mv -f "$tmp" .claim_token
