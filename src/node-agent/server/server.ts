import type { Logger } from '../../lib/logger'
import { VERSION } from '../../version'
import { swarmInfo } from '../../drivers/runtime/swarm-membership'
import { RuntimeUnavailableError } from '../../drivers/runtime/types'
import type { AgentInfo, AgentTls } from '../../drivers/cluster/types'
import { agentHandlers, type NodeFirewall } from './api'
import { startEngineProxy, type EngineProxy } from './engine-proxy'
import { Forwards } from './forwards'
import { HOMES_MAX_REQUEST_BODY, type HomeFolders } from './home-agent'
import type { KernelForwards } from './kernel-forwards'
import { fromControl } from './remote'
import { agentError, routeAgentRequest } from './router'

export interface AgentOptions {
  nodeId: string
  /** The node's private address: the agent, its engine pass-through and its forwards listen there. */
  address: string
  /** The agent's API port; the engine pass-through listens on the next one (0: a free port, for tests). */
  agentPort: number
  /** The only address calls and forwarded traffic are accepted from (cluster.address). */
  controlAddress: string
  tls: AgentTls
  /** The local engine's socket (/var/run/docker.sock). */
  dockerSocket: string
  /** The site volumes' folders (./homes.ts); the homes routes answer 501 without. */
  homes?: HomeFolders
  /**
   * The kernel's rules for the forwards (berth node serve): checked every KERNEL_CHECK_MS,
   * replaced by the first forwards the control plane asks for. They outlive the agent's process
   * (a crash, a stop, a restart): the sites keep serving through them while no agent runs.
   * Without, the agent relays every forward itself.
   */
  kernel?: KernelForwards | null
  /** The site firewall the node keeps, which the control plane may change (the setFirewall route). */
  firewall?: NodeFirewall
  log: Logger
}

/** How often the kernel forwards are checked and restored when something changed them. */
const KERNEL_CHECK_MS = 30_000

/** A running agent. */
export interface RunningAgent {
  port: number
  enginePort: number
  forwards: Forwards
  /** Closes the listeners and every forward. */
  stop(): Promise<void>
}

/**
 * Starts the node agent (`berth node serve`; the routes in contract/routes.ts): its API on
 * `{address}:{agentPort}` and the engine pass-through on `{address}:{agentPort + 1}`, both under
 * mutual TLS (a client certificate of the client CA is required: only the control plane's), both
 * refusing any other remote address than the control plane's. The forwards open on demand.
 */
export async function startAgent(o: AgentOptions): Promise<RunningAgent> {
  const forwards = new Forwards({ address: o.address, controlAddress: o.controlAddress, log: o.log, kernel: o.kernel })
  const instance = crypto.randomUUID()
  const handlers = agentHandlers({ info: () => agentInfo(o, instance), forwards, homes: o.homes, firewall: o.firewall })
  const server = Bun.serve({
    hostname: o.address,
    port: o.agentPort,
    tls: { key: o.tls.key, cert: o.tls.cert, ca: o.tls.clientCa, requestCert: true, rejectUnauthorized: true },
    // Archives stream through the homes routes; JSON bodies are bounded by their routes (the contract).
    maxRequestBodySize: HOMES_MAX_REQUEST_BODY,
    idleTimeout: 0,
    async fetch(request, srv) {
      if (!fromControl(srv.requestIP(request)?.address, o.controlAddress)) {
        return agentError(403, 'forbidden', 'This agent answers the control plane only.')
      }
      try {
        return await routeAgentRequest(handlers, request)
      } catch (err) {
        if (err instanceof RuntimeUnavailableError) return agentError(503, 'engine_unavailable', `The node's Docker engine does not answer on ${o.dockerSocket}.`)
        o.log.error('agent request failed', { path: new URL(request.url).pathname, error: (err as Error).message })
        return agentError(500, 'internal_error', 'The agent failed; see its log (journalctl -u berth-node).')
      }
    },
  })
  let engine: EngineProxy
  try {
    engine = await startEngineProxy({ address: o.address, port: server.port! + 1, controlAddress: o.controlAddress, tls: o.tls, dockerSocket: o.dockerSocket, log: o.log })
  } catch (err) {
    server.stop(true)
    throw err
  }
  const enginePort = engine.port
  // What a previous agent left stays until the control plane asks for the forwards again (within
  // 2 s of seeing this agent's new instance): the sites serve through it meanwhile, and the first
  // forward's set replaces every rule of ours.
  const kernelCheck = o.kernel ? setInterval(() => void o.kernel!.keep(), KERNEL_CHECK_MS) : null
  o.log.info('node agent listening', { node: o.nodeId, api: `${o.address}:${server.port}`, engine: `${o.address}:${enginePort}`, control: o.controlAddress })
  return {
    port: server.port!,
    enginePort,
    forwards,
    async stop() {
      if (kernelCheck) clearInterval(kernelCheck)
      forwards.closeAll()
      // The kernel's rules stay: the sites keep serving while no agent runs (docs/cluster.md).
      await engine.close()
      await server.stop(true)
    },
  }
}

async function agentInfo(o: AgentOptions, instance: string): Promise<AgentInfo> {
  const engine = await swarmInfo(o.dockerSocket)
  return {
    nodeId: o.nodeId, swarmNodeId: engine.nodeId, memoryBytes: engine.memoryBytes, cpus: engine.cpus, version: VERSION, engineVersion: engine.engineVersion, instance,
    ...(o.firewall ? { firewall: o.firewall.policy() } : {}),
  }
}
