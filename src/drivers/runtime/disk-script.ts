/**
 * The shell a site's disk is made, mounted, measured, resized and released with, run by the
 * disks helper (./site-disks.ts) in the engine's mount namespace, with the host's own tools
 * (util-linux, e2fsprogs, coreutils: all essential on Debian). One volume folder `$d`
 * (`/var/lib/docker/volumes/{name}`) holds the engine's `_data` folder and, beside it, the
 * site's filesystem `disk.img`: a sparse file of ext4, mounted over `_data` through a loop
 * device (mount's `-o loop`, freed on unmount). The empty `_data` beneath is made immutable, so
 * a container started before its disk is mounted (the engine's restart policy at boot) can
 * write nothing outside the limit: it fails, and Berth mounts the disk and starts it again.
 *
 * Verbs (stdout is the answer; exit 0 unless said):
 * - `ensure LIMIT`: `present` (mounted already), `mounted` (mounted now), `made` (a new
 *   filesystem of LIMIT bytes; the files of a plain folder from before quotas are copied in).
 * - `mounted`: `yes` or `no`.
 * - `usage`: `USED AVAILABLE` bytes, or `none` when the disk is not mounted.
 * - `grow LIMIT`: grows the mounted filesystem online; exit 5 (`offline`) when the kernel
 *   refuses (no CAP_SYS_RESOURCE on this host).
 * - `resize LIMIT`: resizes offline, either way, the site's container stopped; exit 4 with
 *   `small USED` when the files use more than LIMIT, exit 6 (`busy`, nothing changed) when the
 *   filesystem is still in use once unmounted here (a container started meanwhile).
 * - `release`: unmounted, the image removed (the engine's volume removal follows).
 */
export const DISK_SCRIPT = String.raw`
set -eu
verb=$1 d=$2 limit=$3
img=$d/disk.img data=$d/_data fill=$d/.fill
opts=loop,nosuid,nodev
figures() { df -B1 --output=used,avail "$1" | tail -n 1; }
# How far what the filesystem mounted at $1 uses and has left falls short of the limit: ext4's
# own records (journal, inode tables, reserve) would otherwise come out of the site's figure.
short() { set -- $(figures "$1"); echo $((limit - $1 - $2)); }
# Fits the unmounted image $1 to the limit: resized offline (resize2fs on the file) until the
# filesystem's used and available bytes add up to it, within 1 MiB or 0.2 %.
fit() {
  for _ in 1 2 3; do
    mkdir -p "$fill"
    mount -o "$opts" "$1" "$fill"
    gap=$(short "$fill")
    umount "$fill"
    rmdir "$fill"
    [ "$gap" -gt 1048576 ] || [ "$gap" -lt -1048576 ] || return 0
    [ "$gap" -gt $((limit / 500)) ] || [ "$gap" -lt $((-limit / 500)) ] || return 0
    size=$((($(stat -c %s "$1") + gap) / 4096 * 4096))
    e2fsck -f -y "$1" >/dev/null 2>&1 || [ $? -le 1 ]
    if [ "$gap" -gt 0 ]; then truncate -s "$size" "$1"; fi
    resize2fs -f "$1" $((size / 1024))K >/dev/null 2>&1
    truncate -s "$size" "$1"
  done
}
# Fits a new, empty image $1 to the limit without mounting it: what ext4 keeps for itself (from
# the superblock: its free blocks, less the kernel's reserve of 2 % up to 4096 blocks) is added,
# and the filesystem grown over it offline. Its lost+found goes, so the engine copies an image's
# home into it as into a new volume.
fitnew() {
  # One read of the superblock: its block count, then its free blocks (dumpe2fs's order).
  set -- "$1" $(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Block count:[[:space:]]*//p; s/^Free blocks:[[:space:]]*//p')
  count=$2 free=$3
  resv=$((count / 50))
  [ "$resv" -le 4096 ] || resv=4096
  size=$(((2 * limit - (free - resv) * 4096) / 4096 * 4096))
  truncate -s "$size" "$1"
  resize2fs -f "$1" >/dev/null 2>&1
  debugfs -w -R 'rmdir lost+found' "$1" >/dev/null 2>&1
}
case $verb in
ensure)
  if mountpoint -q "$data"; then echo present; exit 0; fi
  made=
  if [ ! -f "$img" ]; then
    rm -f "$img.new"
    truncate -s "$limit" "$img.new"
    mkfs.ext4 -q -F -m 0 -J size=32 -E root_owner=1000:1000 "$img.new"
    fitnew "$img.new"
    # The files of a plain volume from before disks come along.
    if [ -n "$(ls -A "$data")" ]; then
      mkdir -p "$fill"
      mountpoint -q "$fill" && umount "$fill"
      mount -o "$opts" "$img.new" "$fill"
      cp -a "$data/." "$fill/"
      umount "$fill"
      rmdir "$fill"
    fi
    mv "$img.new" "$img"
    made=1
  fi
  chattr -i "$data" 2>/dev/null || true
  # Only files copied into the image above can be here (the folder is immutable otherwise).
  find "$data" -mindepth 1 -delete
  chattr +i "$data"
  # A loop device still on the image (a mount detached while a container kept it) is mounted
  # again: the same filesystem, never a second one over the same file.
  dev=$(losetup -j "$img" -nO NAME | head -n 1)
  if [ -n "$dev" ]; then mount -o nosuid,nodev "$dev" "$data"; else mount -o "$opts" "$img" "$data"; fi
  if [ -n "$made" ]; then echo made; else echo mounted; fi
  ;;
mounted)
  if mountpoint -q "$data"; then echo yes; else echo no; fi
  ;;
usage)
  if mountpoint -q "$data"; then figures "$data"; else echo none; fi
  ;;
grow)
  # Online, with the site running: the kernel wants CAP_SYS_RESOURCE, which a constrained host
  # may withhold (exit 5: the caller resizes offline instead).
  mountpoint -q "$data" || { echo "not mounted" >&2; exit 3; }
  gap=$(short "$data")
  [ "$gap" -gt 0 ] || { echo grown; exit 0; }
  dev=$(findmnt -no SOURCE "$data")
  truncate -s $((($(stat -c %s "$img") + gap) / 4096 * 4096)) "$img"
  losetup -c "$dev"
  if resize2fs "$dev" >/dev/null 2>&1; then echo grown; else echo offline; exit 5; fi
  ;;
resize)
  # Offline: the site's container is stopped.
  if mountpoint -q "$data"; then
    set -- $(figures "$data")
    if [ "$1" -ge "$limit" ]; then echo "small $1"; exit 4; fi
    umount "$data"
  fi
  # Still attached: something else holds the filesystem (a container started meanwhile). Resizing
  # the file under a live filesystem would corrupt it: put the mount back and refuse.
  for _ in $(seq 1 50); do [ -z "$(losetup -j "$img")" ] && break; sleep 0.02; done
  dev=$(losetup -j "$img" -nO NAME | head -n 1)
  if [ -n "$dev" ]; then mount -o nosuid,nodev "$dev" "$data"; echo busy; exit 6; fi
  fit "$img"
  mount -o "$opts" "$img" "$data"
  echo resized
  ;;
release)
  for m in "$fill" "$data"; do
    if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
  done
  chattr -i "$data" 2>/dev/null || true
  rm -f "$img" "$img.new"
  rmdir "$fill" 2>/dev/null || true
  echo released
  ;;
*) echo "unknown verb $verb" >&2; exit 64 ;;
esac
`

/**
 * Run in the disks helper (a container with the host's pids in view) through the engine's exec:
 * runs DISK_SCRIPT, with its arguments, in the mount namespace of the exec's parent, the
 * container's shim, which runs in the engine's (where the engine resolves the volumes it binds
 * into containers). Several engines may share a host, each in its own mount namespace (a node of
 * the test lab is a dockerd in a network namespace): the parent names the right one.
 */
export const ENTER_ENGINE = String.raw`
script=$1
shift
# runc starts an exec and exits; the process is then its shim's (a subreaper's) child: until that
# happens the parent is runc, for a few milliseconds.
for _ in $(seq 1 200); do
  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$$/status)
  comm=$(cat /proc/$p/comm 2>/dev/null || true)
  case "$comm" in containerd-shim*) break ;; esac
  sleep 0.01
done
case "$comm" in
containerd-shim*) ;;
*) echo "the disks helper's exec is not its container shim's child (parent $p: $comm)" >&2; exit 70 ;;
esac
if command -v nsenter >/dev/null 2>&1; then ns=nsenter; else ns="busybox nsenter"; fi
exec $ns -t "$p" -m -- /bin/sh -c "$script" disk "$@"
`
