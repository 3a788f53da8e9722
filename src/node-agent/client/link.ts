import { createHash } from 'node:crypto'
import type { Agent } from 'node:https'
import { fetchThrough, keepAliveAgent } from '../../drivers/cluster/pinned-https'
import { hostPart } from '../../drivers/runtime/swarm-membership'
import { normalizeFingerprint } from '../../drivers/cluster/pki'
import { NodeRefusedError, NodeUnreachableError, type ClusterNode, type ControlTls, type EngineConnection, type NodeLink } from '../../drivers/cluster/types'

/** How long an agent may take to answer a request's head (its body may stream for longer). */
const ANSWER_TIMEOUT_MS = 10_000

/**
 * TLS errors that mean the node's certificate is not one Berth accepts (it does not chain to the
 * node CA, or it is expired): the node is refused, not unreachable.
 */
const REFUSED_TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED',
  'CERT_REJECTED', 'ERR_TLS_CERT_ALTNAME_INVALID',
])

/**
 * The control plane's way to its nodes (NodeLink, drivers/cluster/types.ts): every call under
 * mutual TLS with the control plane's client certificate, the node's certificate checked against
 * the node CA and pinned to the fingerprint recorded at its join. A removed node is refused
 * before any connection.
 *
 * @example
 * const link = new AgentLink(pki.controlTls())
 * const info = await callAgent(link, node, 'info', {})  // ./calls.ts, the contract's client
 * const docker = new Docker(link.engineOptions(node))
 */
export class AgentLink implements NodeLink {
  /** One keep-alive agent per node and certificate: the pin is checked once per connection. */
  private agents = new Map<string, Agent>()

  constructor(private readonly tls: ControlTls, private readonly o: { answerTimeoutMs?: number } = {}) {}

  private agentOf(node: ClusterNode): Agent {
    const key = `${node.id}:${node.address}:${node.agentPort}:${node.certFingerprint}`
    let agent = this.agents.get(key)
    if (!agent) {
      for (const [k, old] of this.agents) if (k.startsWith(`${node.id}:`)) (old.destroy(), this.agents.delete(k))
      agent = keepAliveAgent({ ca: this.tls.nodeCa, cert: this.tls.cert, key: this.tls.key, checkServerIdentity: pinTo(node) as never })
      this.agents.set(key, agent)
    }
    return agent
  }

  /**
   * A request to the node's agent. Throws NodeRefusedError for a removed node or a certificate
   * that is not the node's, NodeUnreachableError when it does not connect or does not answer
   * within the answer timeout (a caller's own `signal` also ends it).
   */
  async fetch(node: ClusterNode, path: string, init: RequestInit = {}): Promise<Response> {
    refuseRemoved(node)
    const timeoutMs = this.o.answerTimeoutMs ?? ANSWER_TIMEOUT_MS
    const timeout = new AbortController()
    const timer = setTimeout(() => timeout.abort(new NodeUnreachableError(`node ${node.id} (${node.address}) did not answer within ${timeoutMs} ms`)), timeoutMs)
    const signal = init.signal ? AbortSignal.any([init.signal, timeout.signal]) : timeout.signal
    try {
      return await fetchThrough(this.agentOf(node), `https://${hostPart(node.address)}:${node.agentPort}${path}`, { ...init, signal })
    } catch (err) {
      if (init.signal?.aborted) throw err
      throw linkError(node, err, timeout.signal)
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * dockerode's options for the node's engine (`{address}:{agentPort + 1}`): docker-modem passes
   * `ca`, `cert`, `key` and `checkServerIdentity` to node:https, which Bun honours (the link's
   * tests run dockerode through it: a node showing another certificate is refused).
   */
  engineOptions(node: ClusterNode): EngineConnection {
    refuseRemoved(node)
    return {
      protocol: 'https',
      host: node.address,
      port: node.agentPort + 1,
      ca: this.tls.nodeCa,
      cert: this.tls.cert,
      key: this.tls.key,
      checkServerIdentity: pinTo(node),
    }
  }
}

function refuseRemoved(node: ClusterNode): void {
  if (node.state === 'removed') throw new NodeRefusedError(`node ${node.id} was removed: its certificate is revoked`)
}

/**
 * The check that replaces the host-name check: the node's certificate is the one recorded at
 * its join (its SHA-256, `nodes.cert_fingerprint`). It chained to the node CA already.
 */
export function pinTo(node: Pick<ClusterNode, 'id' | 'certFingerprint'>): EngineConnection['checkServerIdentity'] {
  const expected = normalizeFingerprint(node.certFingerprint)
  return (_host, cert) => {
    const shown = cert.raw ? createHash('sha256').update(cert.raw).digest('hex') : normalizeFingerprint(cert.fingerprint256 ?? '')
    return shown === expected ? undefined : new NodeRefusedError(`node ${node.id} showed a certificate that is not the one it joined with (${shown.slice(0, 16)}…)`)
  }
}

/** A failed request as the link's callers see it: refused or unreachable. */
function linkError(node: ClusterNode, err: unknown, timeout: AbortSignal): Error {
  if (timeout.aborted) return timeout.reason as Error
  if (err instanceof NodeRefusedError) return err
  const e = err as { code?: string; message?: string }
  if (e.code && REFUSED_TLS_CODES.has(e.code)) return new NodeRefusedError(`node ${node.id} showed a certificate the cluster's node CA did not sign (${e.code})`)
  return new NodeUnreachableError(`node ${node.id} (${node.address}:${node.agentPort}) is not reachable: ${e.code ?? e.message ?? String(err)}`)
}
