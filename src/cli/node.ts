import { hostname } from 'node:os'
import { publicAddressProblem } from '../domain/cluster'
import { parseFingerprint } from '../drivers/cluster/join-client'
import { NodeFiles } from '../drivers/cluster/node-files'
import { SystemdNotifier } from '../drivers/systemd/notify'
import { DEFAULT_NODE_DATA, serveNode } from '../node-agent/compose'
import { joinNode } from '../node-agent/join'
import { COMMON_OPTIONS, UsageError, type Command } from './command'

/**
 * berth node join and berth node serve: the commands of a cluster's node. Each parses its
 * arguments and calls into the node agent's app (src/node-agent: join.ts, compose.ts).
 */

const DOCKER_SOCKET = '/var/run/docker.sock'
const DEFAULT_AGENT_PORT = 7710

export const nodeJoinCommand: Command = {
  path: ['node', 'join'],
  summary: 'Join this box to a Berth cluster as a node: its certificate, the Swarm, and the berth-node service.',
  usage: 'berth node join URL --token T --fingerprint sha256:HEX --address ADDR [--public-address HOST] [--port 7710] [--name NAME] [--data DIR] [--docker-socket PATH] [--no-systemd] [--json]',
  description: [
    'Run as root on the new box, with Docker running and this binary on it. URL is the control',
    'plane\'s join listener, https://{cluster.address}:{cluster.join_port} (berth nodes token prints the',
    'whole command), T the token from berth nodes token (single use), HEX the SHA-256 of the control',
    'plane\'s join certificate, which the join is pinned to: a box that shows another certificate at URL',
    'is refused before the token or anything else is sent to it, and nothing is written here. ADDR is',
    'this box\'s address on the private network: the',
    'agent, the engine pass-through (port + 1), the sites\' SSH ports and their forwards listen there,',
    'and the Swarm is joined advertising it. HOST (optional) is where the internet reaches this box:',
    'the SSH view of its sites gives it (berth nodes set NODE --public-address HOST gives it later).',
    'The node is joining until its agent first answers the control plane; no site is placed before.',
    '',
    'In order: makes this node\'s key and certificate request (the key never leaves the box), posts the',
    'join (the control plane signs the certificate, pinned from then on by its fingerprint), writes',
    'DIR (default /var/lib/berth-node, 0700: node.json, node.key, node.pem, client-ca.pem, each 0600),',
    'joins the local engine to the Swarm as a worker, then copies this executable to /usr/local/bin/berth,',
    'writes /etc/systemd/system/berth-node.service (berth node serve --data DIR, Type=notify,',
    'Restart=always) and runs systemctl enable --now berth-node, which returns once the agent listens.',
    'Exit 1 when the agent did not start (the join itself is done, do not join again: systemd tries',
    'again every 2 s, and journalctl -u berth-node says why). With --no-systemd it stops before the',
    'binary and the unit: start berth node serve yourself. Prints the node\'s id.',
    'Refused (nothing changed, the token kept) when DIR holds a node already, or the engine manages a',
    'Swarm or runs sites. A box that was a node before (lost, evacuated, removed, joined again) has what',
    'its engine kept cleared first: the old Swarm left, Berth\'s ended containers and networks removed',
    '(its volumes kept); networks the engine\'s database kept (moby#37087) refuse the join with the',
    'commands that clear them. Ports to open between the boxes: docs/cluster.md, "Joining a node";',
    'bringing a box back: docs/cluster.md, "Bringing a box back".',
  ].join('\n'),
  options: {
    token: { type: 'string', value: 'T', help: 'The join token from berth nodes token on the control plane (required).' },
    fingerprint: { type: 'string', value: 'sha256:HEX', help: 'The control plane\'s join certificate\'s SHA-256, as berth nodes token prints it (required): the join trusts that certificate only.' },
    address: { type: 'string', value: 'ADDR', help: 'This box\'s IP address on the private network (required).' },
    'public-address': { type: 'string', value: 'HOST', help: 'Where the internet reaches this box (an IP address or a host name): the host its sites\' SSH view gives.' },
    port: { type: 'string', value: 'PORT', help: `The agent's port on ADDR; the engine pass-through takes the next one (default ${DEFAULT_AGENT_PORT}).` },
    name: { type: 'string', value: 'NAME', help: 'The name berth nodes list shows (default: this box\'s host name).' },
    data: { type: 'string', value: 'DIR', help: `Where the node's identity and certificates are kept (default ${DEFAULT_NODE_DATA}).` },
    'docker-socket': { type: 'string', value: 'PATH', help: `The local Docker engine's socket (default ${DOCKER_SOCKET}).` },
    'no-systemd': { type: 'boolean', help: 'Do not copy the binary to /usr/local/bin/berth nor write or start berth-node.service (run berth node serve yourself).' },
    ...COMMON_OPTIONS,
  },
  examples: [
    'berth node join https://10.0.0.1:7709 --token bnj_... --fingerprint sha256:3f9a... --address 10.0.0.2 --public-address 203.0.113.7',
    'berth node join https://10.0.0.1:7709 --token bnj_... --fingerprint sha256:3f9a... --address 10.0.0.2 --data /srv/berth-node --no-systemd --json',
  ],
  async run(ctx) {
    const v = ctx.values
    const url = ctx.positionals[0]
    if (!url || ctx.positionals.length > 1) throw new UsageError('give the control plane\'s URL, once (berth nodes token prints the whole command)')
    const token = required(v.token, '--token')
    const fingerprint = parseFingerprint(required(v.fingerprint, '--fingerprint'))
    if (!fingerprint) throw new UsageError('--fingerprint must be sha256: and 64 hexadecimal digits, as berth nodes token prints it')
    const address = required(v.address, '--address')
    const agentPort = v.port === undefined ? DEFAULT_AGENT_PORT : Number(v.port)
    if (!Number.isInteger(agentPort) || agentPort < 1 || agentPort > 65534) throw new UsageError('--port must be a TCP port from 1 to 65534 (the engine pass-through takes the next one)')
    const dockerSocket = (v['docker-socket'] as string | undefined) ?? DOCKER_SOCKET
    const files = new NodeFiles((v.data as string | undefined) ?? DEFAULT_NODE_DATA)
    const name = (v.name as string | undefined) ?? hostname()
    const publicAddress = v['public-address'] as string | undefined
    if (publicAddress !== undefined && publicAddressProblem(publicAddress)) throw new UsageError(`--public-address: ${publicAddressProblem(publicAddress)}`)
    return joinNode(ctx.out, files, { url, token, fingerprint, name, address, publicAddress, agentPort, dockerSocket, noSystemd: v['no-systemd'] === true })
  },
}

export const nodeServeCommand: Command = {
  path: ['node', 'serve'],
  summary: 'Run the node agent (what berth-node.service runs): this box\'s engine, files and traffic for the control plane.',
  usage: 'berth node serve [--data DIR]',
  description: [
    'Reads DIR (default /var/lib/berth-node, written by berth node join) and listens on the node\'s',
    'address: the agent\'s API on its port and the Docker engine pass-through on the next, both under',
    'mutual TLS (only the control plane\'s certificate is accepted, and only from cluster.address),',
    'and one port per site on the control plane\'s demand, forwarding the edge\'s traffic to the',
    'site\'s container (a DNAT rule per forward in the kernel, the listener relaying what it does not',
    'carry). Keeps the site firewall the join gave, or the control plane sent since (written to',
    'node.json; containers.subnet_pool: sites kept off this box\'s own addresses, link-local ones, the',
    'control plane\'s but its edge ports, and the cluster\'s ports anywhere; outbound TCP 25 refused',
    'unless the control plane\'s containers.outbound_smtp), checked every 30 s. When',
    'it restarts, the control plane notices within 2 s and asks for its sites\' forwards again.',
    'Logs go to stdout (journalctl -u berth-node). Under systemd (Type=notify) it says READY=1 once it',
    'listens. SIGTERM or SIGINT stops it (the forwards\' rules go with it; the firewall stays).',
  ].join('\n'),
  options: {
    data: { type: 'string', value: 'DIR', help: `The node's data folder (default ${DEFAULT_NODE_DATA}).` },
    help: COMMON_OPTIONS.help!,
  },
  examples: ['berth node serve', 'berth node serve --data /srv/berth-node'],
  async run(ctx) {
    return serveNode((ctx.values.data as string | undefined) ?? DEFAULT_NODE_DATA, undefined, SystemdNotifier.fromEnv(ctx.env))
  },
}

function required(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required`)
  return value
}
