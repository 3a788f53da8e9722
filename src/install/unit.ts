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
 * test/systemd-unit.solo.e2e.test.ts runs Berth under it in a real systemd, the site firewall on, and
 * bounds `systemd-analyze security berth` (2.6, of which CAP_NET_ADMIN 0.2; it was 4.5).
 */
export function renderUnit(binary = '/usr/local/bin/berth'): string {
  return `# Installed by \`berth install\`. Edit /etc/berth/berth.toml, not this file; see docs/operations.md.
[Unit]
Description=Berth: web hosting for AI agents
Documentation=file:/etc/berth/berth.toml
After=network-online.target docker.service berth.socket
Wants=network-online.target docker.service berth.socket
# systemd's default (5 starts in 10 s) refused the sixth of a hoster's quick restarts; a Berth
# that keeps crashing is still given up after 10 tries (about 30 s at RestartSec=2s).
StartLimitIntervalSec=60s
StartLimitBurst=10

[Service]
# Berth says when it listens (READY=1), that its event loop runs (WATCHDOG=1, every 15 s) and
# that it drains (STOPPING=1), itself: drivers/systemd/notify.ts. A loop that hangs for
# WatchdogSec is killed (SIGABRT, then SIGKILL after TimeoutAbortSec) and restarted.
Type=notify
NotifyAccess=main
WatchdogSec=30s
TimeoutAbortSec=5s
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
Also=berth.socket
`
}

/** The addresses berth.socket holds: Berth's listeners of the config (`host:port`; null: off). */
export interface SocketAddresses {
  http: { hostname: string; port: number }
  https: { hostname: string; port: number } | null
  dns: { hostname: string; port: number } | null
}

/** What `berth install` lays out for a new config (install.ts NEW_CONFIG): the committed copy. */
export const PRODUCTION_ADDRESSES: SocketAddresses = {
  http: { hostname: '0.0.0.0', port: 8080 },
  https: { hostname: '0.0.0.0', port: 443 },
  dns: { hostname: '0.0.0.0', port: 53 },
}

/**
 * berth.socket: systemd holds Berth's listening sockets, so that they stay open while Berth
 * restarts: a connection made meanwhile waits in the queue (Backlog=) and a DNS query in the
 * receive buffer until the next process takes them (drivers/systemd/sockets.ts), where without
 * it the port was closed and refused them. ReusePort= lets Berth's own listeners join them. Its
 * addresses are the config's when `berth install` ran; after changing a listen address run
 * `berth install` again and `systemctl restart berth.socket berth`. An address that is a name
 * (not an IP) gets no socket here: Berth binds it itself.
 */
export function renderSocketUnit(addresses: SocketAddresses = PRODUCTION_ADDRESSES): string {
  const at = (a: { hostname: string; port: number }) => {
    const host = a.hostname === 'localhost' ? '127.0.0.1' : a.hostname.replace(/^\[(.*)\]$/, '$1')
    if (!/^[\d.]+$/.test(host) && !host.includes(':')) return null
    return host.includes(':') ? `[${host}]:${a.port}` : `${host}:${a.port}`
  }
  const http = at(addresses.http)
  const https = addresses.https && at(addresses.https)
  const dns = addresses.dns && at(addresses.dns)
  return `# Installed by \`berth install\` from /etc/berth/berth.toml's listen addresses; see docs/operations.md.
[Unit]
Description=Berth's listening sockets, held while Berth restarts

[Socket]
${[
    http && `ListenStream=${http}`,
    https && `ListenStream=${https}`,
    dns && `ListenStream=${dns}`,
    dns && `ListenDatagram=${dns}`,
  ].filter(Boolean).join('\n')}
ReusePort=yes
Backlog=4096
ReceiveBuffer=4M
Service=berth.service

[Install]
WantedBy=sockets.target
`
}
