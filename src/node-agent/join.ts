import { basename } from 'node:path'
import { checkControlPlane, JoinRefusedError, NotTheControlPlaneError, postJoin } from '../drivers/cluster/join-client'
import type { NodeFiles, NodeIdentity } from '../drivers/cluster/node-files'
import { makeNodeKey } from '../drivers/cluster/pki'
import { clearFormerMembership, formerMembership } from '../drivers/runtime/former-membership'
import { engineSecurity, noNewPrivilegesAdvice } from '../drivers/runtime/swarm/hardening'
import { joinSwarm, swarmInfo } from '../drivers/runtime/swarm-membership'
import { renderNodeUnit } from '../install/node-unit'
import { InstallError, writeAllOrNothing } from '../install/write-all'

/**
 * `berth node join`'s work on the node (the command, cli/node.ts, parses its arguments): the
 * node's key and certificate request, the join posted to the control plane (pinned to its join
 * certificate), the node's data folder, the Swarm, and berth-node.service, which runs the agent
 * (./compose.ts).
 */

const NODE_UNIT = '/etc/systemd/system/berth-node.service'
/** The binary berth-node.service runs: the join copies itself there (ProtectHome= and PrivateTmp= hide a home or /tmp from the unit). */
const NODE_BINARY = '/usr/local/bin/berth'

/** Where the join says what it does (the command's output). */
export interface JoinOutput {
  json: boolean
  result(data: unknown, human: () => string): void
  info(line: string): void
  error(line: string): void
}

/** The join's arguments, checked by the command. */
export interface JoinOptions {
  url: string
  token: string
  /** The control plane's join certificate's SHA-256 (lower-case hex). */
  fingerprint: string
  name: string
  address: string
  publicAddress?: string
  agentPort: number
  dockerSocket: string
  /** Stop before the binary and the unit (the caller runs berth node serve). */
  noSystemd: boolean
}

/** Joins this box to the cluster, or goes on with a join that stopped half-way; the command's exit status. */
export async function joinNode(out: JoinOutput, files: NodeFiles, o: JoinOptions): Promise<number> {
  let identity: NodeIdentity
  if (files.joined) {
    identity = files.identity()
    if (identity.swarmNodeId) {
      out.error(`${files.dir} holds node ${identity.nodeId} already: this box has joined. To join again, remove it on the control plane (berth nodes remove), then ${files.dir} here`)
      return 1
    }
    // The join went through but the Swarm's did not (the last run stopped in between): go on from there.
    out.info(`${files.dir} holds node ${identity.nodeId}, not in the Swarm yet; joining it (the token is not needed again)`)
  } else {
    const joined = await joinControlPlane(out, files, o)
    if (typeof joined === 'number') return joined
    identity = joined
  }
  // A warning only: an engine that does not answer this fails the Swarm's join just below.
  const advice = await engineSecurity(identity.dockerSocket).then((e) => noNewPrivilegesAdvice(e, 'node'), () => null)
  if (advice && !out.json) out.error(`warning: ${advice}`)
  out.info(`Joined as ${identity.nodeId}; joining the Swarm at ${identity.managerAddress}...`)
  identity.swarmNodeId = await joinSwarm(identity.dockerSocket, { token: files.swarmToken(), managerAddress: identity.managerAddress, advertiseAddress: identity.address })
  files.writeIdentity(identity)
  files.dropSwarmToken()
  const { service, started } = o.noSystemd ? { service: `not installed (--no-systemd): run berth node serve --data ${files.dir}`, started: true } : installUnit(files.dir)
  if (!started) out.error(`the node joined, but berth-node.service ${service}`)
  out.result({ node_id: identity.nodeId, swarm_node_id: identity.swarmNodeId, data: files.dir, service, warnings: advice ? [advice] : [] }, () => [
    identity.nodeId,
    `In the Swarm as ${identity.swarmNodeId}; identity in ${files.dir}; berth-node.service ${service}.`,
  ].join('\n'))
  return started ? 0 : 1
}

/**
 * The join itself: checks the engine is in no Swarm, makes the key (kept first) and the request,
 * posts it, and writes the answer. The identity, or the exit status of a refusal.
 */
async function joinControlPlane(
  out: JoinOutput,
  files: NodeFiles,
  o: JoinOptions,
): Promise<NodeIdentity | number> {
  // Whoever answers the URL must show the control plane's certificate before anything is
  // written here or sent there (the token included).
  try {
    await checkControlPlane(o.url, o.fingerprint)
  } catch (err) {
    if (!(err instanceof NotTheControlPlaneError)) throw err
    out.error(`the join was refused here: ${err.message}`)
    return 1
  }
  const cleared = await clearFormerCluster(out, o.dockerSocket)
  if (cleared !== 0) return cleared
  const engine = await swarmInfo(o.dockerSocket)
  if (engine.state !== 'inactive') {
    out.error(`the engine on ${o.dockerSocket} is in a Swarm already (state ${engine.state}): run docker swarm leave on this box first`)
    return 1
  }
  const { keyPem, csrPem } = await makeNodeKey(o.name)
  files.writeKey(keyPem)
  let answer
  try {
    answer = await postJoin(o.url, o.fingerprint, { token: o.token, csr: csrPem, name: o.name, address: o.address, agentPort: o.agentPort, memoryBytes: engine.memoryBytes, cpus: engine.cpus, ...(o.publicAddress ? { publicAddress: o.publicAddress } : {}) })
  } catch (err) {
    if (err instanceof NotTheControlPlaneError) {
      out.error(`the join was refused here: ${err.message}`)
      return 1
    }
    if (!(err instanceof JoinRefusedError)) throw err
    out.error(`the control plane refused the join: ${err.message}${err.param ? ` (${err.param})` : ''}`)
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
async function clearFormerCluster(out: JoinOutput, socket: string): Promise<number> {
  const former = await formerMembership(socket)
  if (former.manager) {
    out.error(`the engine on ${socket} manages a Swarm (state ${former.swarmState}): a node must be in none; on a box that is no control plane, run docker swarm leave --force first`)
    return 1
  }
  if (former.running.length > 0) {
    out.error(`the engine on ${socket} runs containers of Berth's sites (${former.running.join(', ')}): this box still serves sites of a cluster. Move them off it (berth nodes drain NODE --move on its control plane) or stop them, then join`)
    return 1
  }
  if (former.staleBridges.length > 0) {
    out.error([
      `the engine on ${socket} keeps the networks of a former Swarm membership in its network database (bridges ${former.staleBridges.join(', ')}, which no network owns: moby#37087),`,
      'and would reject every site task on them. Clear them, then run the same command again (the token stays good):',
      `  systemctl stop docker docker.socket && rm ${former.networkDatabase} && systemctl start docker`,
      '(the engine makes its default networks again; Berth makes its own as sites are placed here)',
    ].join('\n'))
    return 1
  }
  if (former.swarmState === 'inactive' && former.stopped.length === 0 && former.networks.length === 0 && former.orphanBridges.length === 0) return 0
  for (const line of await clearFormerMembership(socket, former)) out.info(`Former membership: ${line}.`)
  if (former.volumes.length > 0) out.info(`Former membership: kept ${former.volumes.length} volume(s) of Berth's former sites (their files as this box last had them; docker volume ls --filter label=dev.berth.managed=true).`)
  return 0
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
