import { hostname } from 'node:os'
import { basename } from 'node:path'
import { publicAddressProblem } from '../domain/cluster'
import { SiteFirewallKeeper } from '../domain/sites'
import { KernelForwards } from '../drivers/cluster/agent/kernel-forwards'
import { startAgent } from '../drivers/cluster/agent/server'
import type { HomesHandler, NodeFirewall } from '../drivers/cluster/agent/api'
import { nodeHomes } from '../drivers/cluster/agent/homes'
import { checkControlPlane, JoinRefusedError, NotTheControlPlaneError, parseFingerprint, postJoin } from '../drivers/cluster/join-client'
import { DEFAULT_NODE_DATA, NodeFiles, type NodeIdentity } from '../drivers/cluster/node-files'
import { makeNodeKey } from '../drivers/cluster/pki'
import { IptablesFirewall } from '../drivers/firewall/iptables'
import type { FirewallCheck, SiteFirewallPolicy } from '../drivers/firewall/types'
import { joinSwarm, swarmInfo } from '../drivers/runtime/swarm-membership'
import { clearFormerMembership, formerMembership } from '../drivers/runtime/former-membership'
import { engineSecurity, noNewPrivilegesAdvice } from '../drivers/runtime/swarm/hardening'
import { SystemdNotifier } from '../drivers/systemd/notify'
import { renderNodeUnit } from '../install/node-unit'
import { InstallError, writeAllOrNothing } from '../install/write-all'
import { createLogger, type Logger } from '../lib/logger'
import { COMMON_OPTIONS, UsageError, type Command, type CommandContext } from './command'

const DOCKER_SOCKET = '/var/run/docker.sock'
const DEFAULT_AGENT_PORT = 7710
const NODE_UNIT = '/etc/systemd/system/berth-node.service'
/** The binary berth-node.service runs: the join copies itself there (ProtectHome= and PrivateTmp= hide a home or /tmp from the unit). */
const NODE_BINARY = '/usr/local/bin/berth'
/** How often the node's site firewall is checked and restored (berth serve's reconcile pass, about as often). */
const FIREWALL_CHECK_MS = 30_000

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
    let identity: NodeIdentity
    if (files.joined) {
      identity = files.identity()
      if (identity.swarmNodeId) {
        ctx.out.error(`${files.dir} holds node ${identity.nodeId} already: this box has joined. To join again, remove it on the control plane (berth nodes remove), then ${files.dir} here`)
        return 1
      }
      // The join went through but the Swarm's did not (the last run stopped in between): go on from there.
      ctx.out.info(`${files.dir} holds node ${identity.nodeId}, not in the Swarm yet; joining it (the token is not needed again)`)
    } else {
      const joined = await joinControlPlane(ctx, files, { url, token, fingerprint, name, address, publicAddress, agentPort, dockerSocket })
      if (typeof joined === 'number') return joined
      identity = joined
    }
    // A warning only: an engine that does not answer this fails the Swarm's join just below.
    const advice = await engineSecurity(identity.dockerSocket).then((e) => noNewPrivilegesAdvice(e, 'node'), () => null)
    if (advice && !ctx.out.json) ctx.out.error(`warning: ${advice}`)
    ctx.out.info(`Joined as ${identity.nodeId}; joining the Swarm at ${identity.managerAddress}...`)
    identity.swarmNodeId = await joinSwarm(identity.dockerSocket, { token: files.swarmToken(), managerAddress: identity.managerAddress, advertiseAddress: identity.address })
    files.writeIdentity(identity)
    files.dropSwarmToken()
    const { service, started } = v['no-systemd'] === true ? { service: `not installed (--no-systemd): run berth node serve --data ${files.dir}`, started: true } : installUnit(files.dir)
    if (!started) ctx.out.error(`the node joined, but berth-node.service ${service}`)
    ctx.out.result({ node_id: identity.nodeId, swarm_node_id: identity.swarmNodeId, data: files.dir, service, warnings: advice ? [advice] : [] }, () => [
      identity.nodeId,
      `In the Swarm as ${identity.swarmNodeId}; identity in ${files.dir}; berth-node.service ${service}.`,
    ].join('\n'))
    return started ? 0 : 1
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
    'control plane\'s but its edge ports, and the cluster\'s ports anywhere), checked every 30 s. When',
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

/**
 * Runs the agent of the node whose data is in `dataDir` until SIGTERM or SIGINT. `homes` serves
 * the sites' homes on this node (default: drivers/cluster/agent/homes.ts, the site volumes of its
 * engine). `notifier` tells systemd (berth-node.service, Type=notify) when the agent listens and when it stops.
 */
export async function serveNode(dataDir: string, homes?: HomesHandler, notifier?: SystemdNotifier): Promise<number> {
  const files = new NodeFiles(dataDir)
  const identity = files.identity()
  const log = createLogger('info')
  const firewall = new KeptNodeFirewall(files, identity, log)
  await firewall.keep()
  const firewallCheck = setInterval(() => void firewall.keep(), FIREWALL_CHECK_MS)
  const agent = await startAgent({
    nodeId: identity.nodeId, address: identity.address, agentPort: identity.agentPort, controlAddress: identity.controlAddress,
    tls: files.tls(), dockerSocket: identity.dockerSocket, homes: homes ?? nodeHomes(identity.dockerSocket), log,
    kernel: new KernelForwards({ node: identity.address, control: identity.controlAddress, log }),
    firewall,
  })
  notifier?.ready(`serving node ${identity.nodeId} on ${identity.address}:${identity.agentPort}`)
  await new Promise<void>((resolve) => {
    const stop = async (signal: string) => {
      log.info('stopping', { signal })
      notifier?.stopping('stopping')
      clearInterval(firewallCheck)
      await agent.stop()
      notifier?.stopped()
      resolve()
    }
    process.once('SIGTERM', () => void stop('SIGTERM'))
    process.once('SIGINT', () => void stop('SIGINT'))
  })
  return 0
}

/**
 * The site firewall this node keeps (node.json's `firewall`), with the single box's keeper: at
 * start, then every FIREWALL_CHECK_MS. Sites on the node are kept off its own addresses (the
 * agent, the engine pass-through, sshd), link-local ones, the control plane's but its edge ports,
 * and the cluster's ports anywhere. The join gives the first policy; the control plane sends a
 * new one when its own changed (`PUT /v1/firewall`), which is written to node.json and replaces
 * the rules (those of another pool removed). Null (the control plane's containers.firewall =
 * false) stops the keeping and leaves the rules, as on the single box.
 */
class KeptNodeFirewall implements NodeFirewall {
  private keeper: SiteFirewallKeeper
  private kept: IptablesFirewall | null
  private changing: Promise<unknown> = Promise.resolve()

  constructor(private files: NodeFiles, private identity: NodeIdentity, private log: Logger) {
    if (identity.firewall === undefined) {
      log.warn('node.json has no site firewall policy (this node joined before nodes were given one): sites here can reach this box\'s own addresses until the control plane sends one')
    }
    this.kept = identity.firewall ? new IptablesFirewall(identity.firewall) : null
    this.keeper = new SiteFirewallKeeper({ firewall: this.kept, log })
  }

  policy(): SiteFirewallPolicy | null {
    return this.identity.firewall ?? null
  }

  keep(): Promise<FirewallCheck | null> {
    return this.serially(() => this.keeper.keep())
  }

  /** Two control plane calls in a row end with the second policy. */
  set(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null> {
    return this.serially(() => this.replace(policy))
  }

  /** One pass or change at a time: two at once would both replace the same rules. */
  private serially(work: () => Promise<FirewallCheck | null>): Promise<FirewallCheck | null> {
    const next = this.changing.then(work)
    this.changing = next.catch(() => {})
    return next
  }

  private async replace(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null> {
    const old = this.kept
    this.identity = { ...this.identity, firewall: policy }
    this.files.writeIdentity(this.identity)
    this.kept = policy ? new IptablesFirewall(policy) : null
    this.keeper = new SiteFirewallKeeper({ firewall: this.kept, log: this.log })
    this.log.info('the control plane gave a new site firewall policy', { pool: policy?.pool ?? null })
    if (old && policy && old.policy.pool !== policy.pool) {
      await old.remove().catch((err) => this.log.warn('could not remove the site firewall of the former pool', { pool: old.policy.pool, error: (err as Error).message }))
    }
    return this.keeper.keep()
  }
}

/**
 * The join itself: checks the engine is in no Swarm, makes the key (kept first) and the request,
 * posts it, and writes the answer. The identity, or the exit status of a refusal.
 */
async function joinControlPlane(
  ctx: CommandContext,
  files: NodeFiles,
  o: { url: string; token: string; fingerprint: string; name: string; address: string; publicAddress?: string; agentPort: number; dockerSocket: string },
): Promise<NodeIdentity | number> {
  // Whoever answers the URL must show the control plane's certificate before anything is
  // written here or sent there (the token included).
  try {
    await checkControlPlane(o.url, o.fingerprint)
  } catch (err) {
    if (!(err instanceof NotTheControlPlaneError)) throw err
    ctx.out.error(`the join was refused here: ${err.message}`)
    return 1
  }
  const cleared = await clearFormerCluster(ctx, o.dockerSocket)
  if (cleared !== 0) return cleared
  const engine = await swarmInfo(o.dockerSocket)
  if (engine.state !== 'inactive') {
    ctx.out.error(`the engine on ${o.dockerSocket} is in a Swarm already (state ${engine.state}): run docker swarm leave on this box first`)
    return 1
  }
  const { keyPem, csrPem } = await makeNodeKey(o.name)
  files.writeKey(keyPem)
  let answer
  try {
    answer = await postJoin(o.url, o.fingerprint, { token: o.token, csr: csrPem, name: o.name, address: o.address, agentPort: o.agentPort, memoryBytes: engine.memoryBytes, cpus: engine.cpus, ...(o.publicAddress ? { publicAddress: o.publicAddress } : {}) })
  } catch (err) {
    if (err instanceof NotTheControlPlaneError) {
      ctx.out.error(`the join was refused here: ${err.message}`)
      return 1
    }
    if (!(err instanceof JoinRefusedError)) throw err
    ctx.out.error(`the control plane refused the join: ${err.message}${err.param ? ` (${err.param})` : ''}`)
    return err.status === 401 || err.status === 422 || err.status === 409 ? 2 : 1
  }
  const identity: NodeIdentity = {
    nodeId: answer.nodeId, name: o.name, address: o.address, agentPort: o.agentPort, controlAddress: answer.controlAddress, managerAddress: answer.managerAddress,
    swarmNodeId: null, dockerSocket: o.dockerSocket, joinedVia: o.url, joinedAt: new Date().toISOString(), firewall: answer.firewall ?? null,
  }
  files.writeJoined(identity, answer.certificate, answer.clientCa, answer.swarmToken)
  return identity
}

/**
 * A box that was a node before (lost, evacuated, removed, joined again: docs/cluster.md, "Bringing
 * a box back"): what its engine kept of that membership is cleared before the join, or the join is
 * refused, nothing sent, saying what to do. 0 when the engine is ready to join.
 */
async function clearFormerCluster(ctx: CommandContext, socket: string): Promise<number> {
  const former = await formerMembership(socket)
  if (former.manager) {
    ctx.out.error(`the engine on ${socket} manages a Swarm (state ${former.swarmState}): a node must be in none; on a box that is no control plane, run docker swarm leave --force first`)
    return 1
  }
  if (former.running.length > 0) {
    ctx.out.error(`the engine on ${socket} runs containers of Berth's sites (${former.running.join(', ')}): this box still serves sites of a cluster. Move them off it (berth nodes drain NODE --move on its control plane) or stop them, then join`)
    return 1
  }
  if (former.staleBridges.length > 0) {
    ctx.out.error([
      `the engine on ${socket} keeps the networks of a former Swarm membership in its network database (bridges ${former.staleBridges.join(', ')}, which no network owns: moby#37087),`,
      'and would reject every site task on them. Clear them, then run the same command again (the token stays good):',
      `  systemctl stop docker docker.socket && rm ${former.networkDatabase} && systemctl start docker`,
      '(the engine makes its default networks again; Berth makes its own as sites are placed here)',
    ].join('\n'))
    return 1
  }
  if (former.swarmState === 'inactive' && former.stopped.length === 0 && former.networks.length === 0 && former.orphanBridges.length === 0) return 0
  for (const line of await clearFormerMembership(socket, former)) ctx.out.info(`Former membership: ${line}.`)
  if (former.volumes.length > 0) ctx.out.info(`Former membership: kept ${former.volumes.length} volume(s) of Berth's former sites (their files as this box last had them; docker volume ls --filter label=dev.berth.managed=true).`)
  return 0
}

function required(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required`)
  return value
}

/**
 * Copies this executable to NODE_BINARY (a binary in a home or /tmp, where it is often downloaded,
 * is hidden from the unit's sandbox: the agent would never start), writes berth-node.service and
 * starts it. systemctl returns once the agent listens (Type=notify) or has failed. What happened,
 * and whether the agent runs.
 */
function installUnit(dataDir: string): { service: string; started: boolean } {
  const self = process.execPath
  const copy = self === NODE_BINARY || basename(self) === 'bun' ? [] : [{ path: NODE_BINARY, mode: 0o755, content: { copyOf: self } }]
  try {
    writeAllOrNothing([{ path: '/usr/local/bin', mode: 0o755 }], [...copy, { path: NODE_UNIT, mode: 0o644, content: renderNodeUnit(NODE_BINARY, dataDir) }])
  } catch (err) {
    if (!(err instanceof InstallError)) throw err
    return { service: `was not installed: ${err.message} Run berth node serve --data ${dataDir} yourself, or fix that and install the unit`, started: false }
  }
  for (const argv of [['systemctl', 'daemon-reload'], ['systemctl', 'enable', '--now', 'berth-node']]) {
    const run = Bun.spawnSync(argv, { stdout: 'ignore', stderr: 'pipe' })
    if (run.exitCode !== 0) {
      return { service: `is in ${NODE_UNIT}, but ${argv.join(' ')} failed (${run.stderr.toString().trim()})${argv[1] === 'enable' ? '; systemd tries again every 2 s: journalctl -u berth-node says why' : ': run it yourself'}`, started: false }
    }
  }
  return { service: 'installed and started', started: true }
}
