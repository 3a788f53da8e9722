#!/bin/sh
# Runs a command inside one node of the two-node lab (test/lab/cluster-lab.ts):
#
#   in-node.sh CGROUP_DIR NETNS MOUNTPOINT COMMAND [ARG...]
#
# - joins the lab's pids cgroup CGROUP_DIR (a folder under /sys/fs/cgroup/pids), so that everything
#   the command starts, dockerd's containers' shims included, is found and killed at the lab's stop
#   or at the next run's sweep even when this run was killed;
# - enters the network namespace NETNS (/run/netns/NETNS) and a mount namespace of its own,
#   private, so no mount the command makes (dockerd's overlays) shows on the host or outlives it;
# - mounts a fresh sysfs (so /sys/class/net shows the namespace's links, as `ip netns exec` does)
#   and puts the host's cgroup tree back under it (`ip netns exec` loses /sys/fs/cgroup, which
#   dockerd and runc need): the tree is bound at MOUNTPOINT (an empty folder of the lab's) before
#   sysfs hides it, then moved to /sys/fs/cgroup.
set -eu
cgroup=$1 netns=$2 mountpoint=$3
shift 3
echo $$ > "$cgroup/cgroup.procs"
export LAB_MOUNTPOINT="$mountpoint"
exec nsenter "--net=/run/netns/$netns" -- unshare --mount --propagation private -- sh -c '
  set -e
  mount --rbind /sys/fs/cgroup "$LAB_MOUNTPOINT"
  mount -t sysfs sysfs /sys
  mount --move "$LAB_MOUNTPOINT" /sys/fs/cgroup
  unset LAB_MOUNTPOINT
  exec "$@"' in-node "$@"
