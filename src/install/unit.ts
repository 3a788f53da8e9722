/**
 * The systemd unit `berth install` writes. systemd/berth.service in the repository is generated
 * from this by `bun run build` (a test keeps the two equal), so the binary needs no file beside it.
 *
 * Berth runs as root because it drives Docker through /run/docker.sock, which is root-equivalent
 * anyway, and later manages site volumes owned by uid 1000. The sandbox below takes away what it
 * does not need: the file system is read-only except its data and config folders, no new
 * privileges, no kernel tunables or modules, and a capability set limited to binding low ports,
 * keeping the site firewall (iptables) and handling customer files.
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
# Docker volumes (files API, logs, snapshot restores; Docker's default data root).
NoNewPrivileges=yes
ProtectSystem=strict
# /run/xtables.lock: iptables-legacy's lock, for the site firewall (iptables-nft takes none).
ReadWritePaths=/var/lib/berth /etc/berth -/run/docker.sock -/var/lib/docker/volumes -/run/xtables.lock
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
# No RestrictSUIDSGID=: its seccomp filter cannot look inside openat2's struct open_how, so it
# answers every openat2 with ENOSYS (the files and logs APIs and disk usage open each name under
# a site's home with openat2 RESOLVE_BENEATH, with no fallback), and it forbids the setuid and
# setgid bits that restoring a site's files must put back (tar: Cannot change mode to rwxrwsr-x).
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
# CAP_NET_ADMIN (and CAP_NET_RAW for iptables-legacy): the iptables Berth runs to check and restore
# the site firewall at start (drivers/firewall), which keeps sites off the host's addresses.
CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_NET_ADMIN CAP_NET_RAW CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER CAP_FSETID CAP_KILL CAP_SETUID CAP_SETGID
AmbientCapabilities=CAP_NET_BIND_SERVICE

[Install]
WantedBy=multi-user.target
`
}
