#!/bin/sh
# Berth's in-container agent: manages ~/.ssh/authorized_keys of the site user.
#
#   sh -c "$(cat ssh-keys.sh)" berth-agent add BLOB LINE   install LINE unless a line holds BLOB
#   sh -c "$(cat ssh-keys.sh)" berth-agent remove BLOB     drop every line holding BLOB
#   sh -c "$(cat ssh-keys.sh)" berth-agent list            print the file
#
# Run on demand, as the site user, in berth/php (dash). Berth has checked LINE (one valid public
# key line); BLOB is its base64 key. The file is rewritten through a fresh mktemp file renamed
# over it, so a symbolic link planted at its name is replaced, never written through, and sshd
# (StrictModes) finds ~/.ssh 700 and the file 600. Exit status: 0 done (add prints "added" or
# "present"), 2 bad arguments, 3 refused (message on stderr).
set -eu
op=${1:-}
cd -P "${HOME:-/home/site}"
if [ -L .ssh ]; then echo "~/.ssh is a symbolic link; remove it and retry" >&2; exit 3; fi
mkdir -p .ssh
chmod 700 .ssh
cd -P .ssh
current() { if [ -f authorized_keys ] && [ ! -L authorized_keys ]; then cat authorized_keys; fi; }
replace() { chmod 600 "$1"; mv -f "$1" authorized_keys; }
case $op in
  list)
    current
    ;;
  add)
    [ "$#" -eq 3 ] || { echo "usage: add BLOB LINE" >&2; exit 2; }
    if current | grep -qF -- " $2"; then echo present; exit 0; fi
    tmp=$(mktemp .authorized_keys.XXXXXX)
    { current; printf '%s\n' "$3"; } >"$tmp"
    replace "$tmp"
    echo added
    ;;
  remove)
    [ "$#" -eq 2 ] || { echo "usage: remove BLOB" >&2; exit 2; }
    tmp=$(mktemp .authorized_keys.XXXXXX)
    current | grep -vF -- " $2" >"$tmp" || true
    replace "$tmp"
    ;;
  *)
    echo "usage: add|remove|list" >&2
    exit 2
    ;;
esac
