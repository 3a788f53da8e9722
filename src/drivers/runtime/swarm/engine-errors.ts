import type { ClusterNode } from '../../cluster/types'
import { asUnavailable } from '../engine'
import { RuntimeUnavailableError } from '../types'

/**
 * The RuntimeUnavailableError for an engine call of the cluster runtime that failed because an
 * engine did not answer, naming the engine that did not: a node's engine is reached through its
 * agent (`{address}:{agentPort + 1}`), so a refused or broken connection there is the node's
 * agent (stopped, crashed, or the network between), said with the node and what to do, and not
 * the control plane's engine (`managerSocket`), which the message would otherwise blame. Which
 * one failed is read from the socket error's `address` and `port` (Node's connect errors carry
 * them), never from its message. Undefined when the error is not an engine that did not answer.
 *
 * @example
 * try { await fn() } catch (err) { throw unavailableEngine('/var/run/docker.sock', nodes(), err) ?? err }
 */
export function unavailableEngine(managerSocket: string, nodes: ClusterNode[], err: unknown): RuntimeUnavailableError | undefined {
  const generic = asUnavailable(managerSocket, err)
  if (!generic) return undefined
  const { address, port, code } = err as { address?: unknown; port?: unknown; code?: string }
  const node = nodes.find((n) => n.address === address && (port === n.agentPort + 1 || port === n.agentPort))
  if (!node) return generic
  return new RuntimeUnavailableError(
    `Node ${node.name} (${node.id}, ${node.address}) did not answer: its agent (berth node serve, berth-node.service) refused or dropped the connection to port ${String(port)} (${code}). Start it on that box (systemctl start berth-node; journalctl -u berth-node says why it stopped), or, if the box is lost, bring its sites back elsewhere with berth nodes evacuate ${node.id}.`,
    { cause: err },
  )
}
