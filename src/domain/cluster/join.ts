import { createHash, randomBytes } from 'node:crypto'
import { InvalidCsrError } from '../../drivers/cluster/errors'
import type { JoinAnswer, JoinRequest } from '../../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../../drivers/firewall/types'
import type { Clock } from '../../lib/clock'
import { isIpAddress } from '../../lib/ip'
import { conflict, DomainError, invalid } from '../errors'
import { publicAddressProblem } from './public-address'
import type { NodesRepository } from './repository'

/** `bnj_` and 43 base64url characters: 256 random bits. */
export const JOIN_TOKEN_PREFIX = 'bnj_'
const JOIN_TOKEN = /^bnj_[A-Za-z0-9_-]{43}$/
/** A host name as `berth nodes list` shows it: letters, digits, dots and dashes. */
const NODE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,62})$/
const MAX_CSR_CHARS = 8192

/**
 * A join token that is unknown, used already or expired: the join route answers 401
 * `invalid_join_token`. One message for all three, so that a caller learns nothing about tokens.
 */
export class InvalidJoinTokenError extends DomainError {
  constructor() {
    super('unauthorized', 'The join token is unknown, used or expired: make a new one with berth nodes token on the control plane.')
  }
}

/**
 * A name that a node not removed has already (two boxes with the same host name): the join
 * route answers 409 `node_name_taken` with `param` name. Nothing is recorded and the token is
 * not spent, so the same token joins under another `--name`.
 */
export class NodeNameTakenError extends DomainError {
  constructor(name: string, holder: { id: string; state: string }) {
    super('conflict', `A node named '${name}' is in the cluster already (${holder.id}, ${holder.state}): join this box under another name with --name (berth node join ... --name NAME), or remove ${holder.id} first (berth nodes remove ${holder.id}).`, 'name')
  }
}

/** The PKI's part in a join (drivers/cluster/pki.ts ClusterPki). */
export interface NodeSigner {
  /** Throws InvalidCsrError for a request it does not sign. */
  signNode(csrPem: string, nodeId: string, address: string): Promise<{ certificate: string; serial: string; fingerprint: string }>
  readonly clientCaPem: string
}

/** The Swarm manager's part in a join (drivers/runtime/swarm-membership.ts on the control plane's engine). */
export interface SwarmManager {
  /** The token a worker joins the Swarm with. */
  workerJoinToken(): Promise<string>
}

export interface JoinOptions {
  /** cluster.address: the Swarm manager's address and the only one the agents accept. */
  controlAddress: string
  /** cluster.join_token_minutes. */
  tokenMinutes: number
  /**
   * The site firewall every node keeps (JoinAnswer.firewall); null when containers.firewall =
   * false. A function is read at each join (the policy follows the nodes).
   */
  firewall: SiteFirewallPolicy | null | (() => SiteFirewallPolicy | null)
}

/**
 * Joining nodes to the cluster (issue 28, docs/cluster.md "Joining a node"): single-use join
 * tokens, and the join itself: the token spent and the node recorded in one transaction, its
 * certificate signed from the request it sent (its key never leaves it), and what it needs to
 * join the Swarm.
 *
 * @example
 * const token = joins.issueToken() // berth nodes token
 * const answer = await joins.join({ token, csr, name: 'worker-1', address: '10.0.0.2', agentPort: 7710, memoryBytes, cpus })
 */
export class JoinService {
  constructor(
    private readonly repo: NodesRepository,
    private readonly signer: NodeSigner,
    private readonly swarm: SwarmManager,
    private readonly clock: Clock,
    private readonly o: JoinOptions,
  ) {}

  /** A new join token, valid for cluster.join_token_minutes, for one join. Only its SHA-256 is kept. */
  issueToken(): { token: string; expiresAt: number } {
    return issueJoinToken(this.repo, this.clock, this.o.tokenMinutes)
  }

  /**
   * Joins a node, recorded `joining` until its agent first answers (no site is placed on it
   * before). Throws InvalidJoinTokenError for a token that is unknown, used or expired
   * (checked first, so that nothing else is said to a caller without one), an `invalid` error
   * naming the field for bad input, NodeNameTakenError for a name another node has (active,
   * draining or down; a removed node's name is free), a conflict for its address. The token
   * is spent only by a join that succeeds.
   */
  async join(req: JoinRequest): Promise<JoinAnswer> {
    const token = typeof req?.token === 'string' && JOIN_TOKEN.test(req.token) ? hashToken(req.token) : null
    if (!token || !this.repo.tokenUsable(token, this.clock.now())) throw new InvalidJoinTokenError()
    this.validate(req)
    const nodeId = `node_${randomBytes(6).toString('hex')}`
    let signed: Awaited<ReturnType<NodeSigner['signNode']>>
    try {
      signed = await this.signer.signNode(req.csr, nodeId, req.address)
    } catch (err) {
      if (err instanceof InvalidCsrError) throw invalid('csr', `${err.message}.`)
      throw err
    }
    const swarmToken = await this.swarm.workerJoinToken()
    // Again with no await before the insert: a join under the same name that ran meanwhile is seen.
    this.refuseTakenName(req.name)
    const now = this.clock.now()
    const node = this.repo.spendTokenAndInsert(token, now, {
      id: nodeId,
      name: req.name,
      address: req.address,
      agentPort: req.agentPort,
      publicAddress: req.publicAddress ?? null,
      certFingerprint: signed.fingerprint,
      certSerial: signed.serial,
      // Placement skips it until its agent first answers the health monitor (health.ts).
      state: 'joining',
      memoryBytes: req.memoryBytes,
      cpus: req.cpus,
      joinedAt: now,
    })
    if (!node) throw new InvalidJoinTokenError()
    return {
      nodeId,
      certificate: signed.certificate,
      clientCa: this.signer.clientCaPem,
      swarmToken,
      managerAddress: this.o.controlAddress,
      controlAddress: this.o.controlAddress,
      // Read now that the node is recorded: its policy blocks its own address and closes its own agent ports.
      firewall: typeof this.o.firewall === 'function' ? this.o.firewall() : this.o.firewall,
    }
  }

  private validate(req: JoinRequest): void {
    if (typeof req.name !== 'string' || !NODE_NAME.test(req.name)) throw invalid('name', 'name must be the node\'s host name: 1 to 63 letters, digits, dots or dashes.')
    if (typeof req.address !== 'string' || !isIpAddress(req.address)) throw invalid('address', 'address must be the node\'s IP address on the private network (e.g. 10.0.0.2).')
    if (req.address === this.o.controlAddress) throw invalid('address', `address ${req.address} is the control plane's own (cluster.address); give the joining node's address.`)
    if (!Number.isInteger(req.agentPort) || req.agentPort < 1 || req.agentPort > 65534) throw invalid('agentPort', 'agentPort must be a TCP port from 1 to 65534 (the engine pass-through takes the next one).')
    if (!Number.isInteger(req.memoryBytes) || req.memoryBytes < 0) throw invalid('memoryBytes', 'memoryBytes must be a whole number of bytes, 0 or more.')
    if (!Number.isInteger(req.cpus) || req.cpus < 0) throw invalid('cpus', 'cpus must be a whole number, 0 or more.')
    if (req.publicAddress != null && publicAddressProblem(req.publicAddress)) throw invalid('publicAddress', `publicAddress: ${publicAddressProblem(req.publicAddress)}`)
    if (typeof req.csr !== 'string' || req.csr.length === 0 || req.csr.length > MAX_CSR_CHARS) throw invalid('csr', 'csr must be a PEM certificate request (berth node join makes it).')
    this.refuseTakenName(req.name)
    const clash = this.repo.list({ live: true }).find((n) => n.address === req.address)
    if (clash) throw conflict(`Node ${clash.id} has the address ${req.address} already; remove it first (berth nodes remove ${clash.id}).`, 'address')
  }

  /** Throws NodeNameTakenError when a node not removed has `name`. */
  private refuseTakenName(name: string): void {
    const holder = this.repo.findByName(name)
    if (holder) throw new NodeNameTakenError(name, holder)
  }
}

/** A new join token valid for `minutes` (`berth nodes token`, which needs no PKI nor Swarm for it). */
export function issueJoinToken(repo: NodesRepository, clock: Clock, minutes: number): { token: string; expiresAt: number } {
  const token = `${JOIN_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`
  const now = clock.now()
  const expiresAt = now + minutes * 60_000
  repo.insertToken(hashToken(token), now, expiresAt)
  return { token, expiresAt }
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

