/**
 * The systemd unit `berth node join` writes on a node (/etc/systemd/system/berth-node.service):
 * the node agent, `berth node serve --data DIR`. It runs as root, as Berth does, because it
 * drives the local Docker engine (root-equivalent anyway), serves the sites' homes on their
 * volumes and keeps iptables rules (the site firewall, the site forwards). Restart=always: the
 * agent is the only way the control plane reaches this node's containers, files and traffic, so
 * it comes back whatever ended it. Type=notify: the agent says READY=1 once it listens, so
 * `systemctl start` (and the join's `enable --now`) returns when the control plane can reach it, and
 * fails when it exits first. `binary` is where the join copied itself (/usr/local/bin/berth):
 * ProtectHome= and PrivateTmp= hide a binary in a home or in /tmp from the service.
 */
export function renderNodeUnit(binary: string, dataDir: string): string {
  return `# Written by \`berth node join\`. The node's identity and certificates are in ${dataDir}; see docs/cluster.md.
[Unit]
Description=Berth node agent: this box's engine, files and traffic for the control plane
Documentation=file:${dataDir}/node.json
After=network-online.target docker.service
Wants=network-online.target docker.service
# Restart=always with no start limit: systemd's default (5 starts in 10 s) would give up for good
# on an agent that fails fast (a port taken, the engine not up yet) and never bring it back.
StartLimitIntervalSec=0

[Service]
Type=notify
NotifyAccess=main
TimeoutStartSec=60s
ExecStart=${binary} node serve --data ${dataDir}
Restart=always
RestartSec=2s
TimeoutStopSec=15s
LimitNOFILE=65536
UMask=0077
NoNewPrivileges=yes
ProtectSystem=strict
# /run/xtables.lock: iptables-legacy's lock, for the site firewall and the forwards' rules (iptables-nft takes none).
ReadWritePaths=${dataDir} -/run/docker.sock -/var/lib/docker/volumes -/run/xtables.lock
ProtectHome=yes
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK

[Install]
WantedBy=multi-user.target
`
}
