/**
 * The systemd unit `berth install` writes. systemd/berth.service in the repository is generated
 * from this by `bun run build` (a test keeps the two equal), so the binary needs no file beside it.
 *
 * Berth runs as root because it drives Docker through /run/docker.sock, which is root-equivalent
 * anyway, and later manages site volumes owned by uid 1000. The sandbox below takes away what it
 * does not need: the file system is read-only except its data folder, the Docker socket and the
 * volumes (the config folder is read-only too), no new privileges, no kernel tunables or modules,
 * a system call allow-list, other users' processes hidden, and a capability set limited to binding
 * low ports, keeping the site firewall (iptables) and handling customer files.
 * test/systemd-unit.e2e.test.ts runs Berth under it in a real systemd, the site firewall on, and
 * bounds `systemd-analyze security berth` (2.6, of which CAP_NET_ADMIN 0.2; it was 4.5).
 */
export function renderUnit(binary = '/usr/local/bin/berth'): string {
  return `# Installed by \`berth install\`. Edit /etc/berth/berth.toml, not this file; see docs/operations.md.
[Unit]
Description=Berth: web hosting for AI agents
Documentation=file:/etc/berth/berth.toml
After=network-online.target docker.service
Wants=network-online.target docker.service

[Service]
Type=simple
Environment=BERTH_CONFIG=/etc/berth/berth.toml
ExecStart=${binary} serve
Restart=on-failure
RestartSec=2s
TimeoutStopSec=30s
LimitNOFILE=65536
UMask=0027

# Hardening that still lets Berth reach Docker (/run/docker.sock) and the sites' files on their
# Docker volumes (files API, logs, snapshot restores; Docker's default data root). /etc/berth is
# not among them: Berth only reads its config (ProtectSystem=strict leaves it read-only).
NoNewPrivileges=yes
ProtectSystem=strict
# /run/xtables.lock: iptables-legacy's lock, for the site firewall (iptables-nft takes none).
ReadWritePaths=/var/lib/berth -/run/docker.sock -/var/lib/docker/volumes -/run/xtables.lock
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
# The kernel still loads the modules the site firewall's rules need (conntrack, multiport, REJECT)
# on demand: it runs modprobe itself, outside this sandbox, which only stops Berth's own calls.
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
# Other users' processes are hidden in /proc: Berth reads only its own (/proc/self/fd).
ProtectProc=invisible
# No ProcSubset=pid: the HTTPS listener reads /proc/sys/net/ipv4/tcp_migrate_req to say whether
# a renewal can reset connections.
# The system calls of a service, less the scheduling and resource ones (nice, setrlimit, mbind):
# Berth, Bun's runtime and the tar it runs for snapshots call none. openat2 is allowed outright
# (an allow-list does not look at its arguments, unlike RestrictSUIDSGID= below). Anything else
# fails with EPERM instead of killing Berth for every tenant.
SystemCallFilter=@system-service
SystemCallFilter=~@resources
SystemCallErrorNumber=EPERM
# No RestrictSUIDSGID=: its seccomp filter cannot look inside openat2's struct open_how, so it
# answers every openat2 with ENOSYS (the files and logs APIs and disk usage open each name under
# a site's home with openat2 RESOLVE_BENEATH, with no fallback), and it forbids the setuid and
# setgid bits that restoring a site's files must put back (tar: Cannot change mode to rwxrwsr-x).
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
# Binding ports below 1024, and handling the sites' files: owned by their user (chown), read
# and replaced whatever their mode (DAC_OVERRIDE, FOWNER), setgid folders restored (FSETID).
# No CAP_KILL, CAP_SETUID or CAP_SETGID: Berth signals only its own children and never changes
# user. Root holds the bounding set without AmbientCapabilities=. CAP_NET_ADMIN (and CAP_NET_RAW
# for iptables-legacy): the iptables Berth runs to check and restore the site firewall
# (drivers/firewall), which keeps sites off the host's addresses.
CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER CAP_FSETID

[Install]
WantedBy=multi-user.target
`
}
