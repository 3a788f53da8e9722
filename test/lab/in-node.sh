#!/bin/sh
# Runs a command inside one node of the two-node lab (test/lab/cluster-lab.ts):
#
#   in-node.sh CGROUP_DIR NETNS MOUNTPOINT HOLDER HOLDER_CGROUP_DIR COMMAND [ARG...]
#
# - joins the lab's pids cgroup CGROUP_DIR (a folder under /sys/fs/cgroup/pids), so that everything
#   the command starts, dockerd's containers' shims included, is found and killed at the lab's stop
#   or at the next run's sweep even when this run was killed;
# - enters the network namespace NETNS (/run/netns/NETNS) and the node's mount namespace: one per
#   node, private, so no mount a node's processes make (dockerd's overlays, the sites' disks)
#   shows on the host or outlives the lab, and shared by all of them as one machine's is (Berth
#   reads the sites' disks the node's engine mounted). A holder process (its pid in the file
#   HOLDER, in the pids cgroup HOLDER_CGROUP_DIR: a stopped engine leaves it, a powered-off node
#   does not) keeps it, made by the first command of the node: it mounts a fresh sysfs (so
#   /sys/class/net shows the namespace's links, as `ip netns exec` does) and puts the host's
#   cgroup tree back under it (`ip netns exec` loses /sys/fs/cgroup, which dockerd and runc need):
#   the tree is bound at MOUNTPOINT (an empty folder of the lab's) before sysfs hides it, then
#   moved to /sys/fs/cgroup.
set -eu
cgroup=$1 netns=$2 mountpoint=$3 holder=$4 holdercg=$5
shift 5
echo $$ > "$cgroup/cgroup.procs"
(
  flock 9
  # The holder is alive and is the holder (a pid taken again by another process is not).
  if [ ! -s "$holder" ] || [ "$(tr '\0' ' ' < "/proc/$(cat "$holder")/cmdline" 2>/dev/null)" != "sleep 2147483647 " ]; then
    rm -f "$holder"
    LAB_MOUNTPOINT="$mountpoint" LAB_HOLDER="$holder" nsenter "--net=/run/netns/$netns" -- unshare --mount --propagation private -- sh -c '
      set -e
      mount --rbind /sys/fs/cgroup "$LAB_MOUNTPOINT"
      mount -t sysfs sysfs /sys
      mount --move "$LAB_MOUNTPOINT" /sys/fs/cgroup
      echo $$ > "$LAB_HOLDER.new"
      mv "$LAB_HOLDER.new" "$LAB_HOLDER"
      exec sleep 2147483647' </dev/null >/dev/null 2>&1 9>&- &
    echo $! > "$holdercg/cgroup.procs"
    while [ ! -s "$holder" ]; do sleep 0.01; done
  fi
) 9>"$holder.lock"
exec nsenter "--net=/run/netns/$netns" "--mount=/proc/$(cat "$holder")/ns/mnt" "--wd=$PWD" -- "$@"
