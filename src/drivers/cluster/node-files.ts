import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { writePrivateFile } from '../../lib/private-file'
import type { SiteFirewallPolicy } from '../firewall/types'
import type { AgentTls } from './types'

/** Where `berth node join` keeps a node's identity unless told (--data). */
export const DEFAULT_NODE_DATA = '/var/lib/berth-node'

/** `{data}/node.json`: what the join answered and the node said, for `berth node serve`. */
export interface NodeIdentity {
  nodeId: string
  name: string
  /** The node's private address: the agent, the engine pass-through and the forwards listen there. */
  address: string
  agentPort: number
  /** The only address the agent accepts (cluster.address). */
  controlAddress: string
  /** The Swarm manager this node's engine joined. */
  managerAddress: string
  swarmNodeId: string | null
  dockerSocket: string
  /** The control plane's URL the node joined through. */
  joinedVia: string
  joinedAt: string
  /**
   * The site firewall the agent keeps on this box (JoinAnswer.firewall); null when the control
   * plane's containers.firewall is false. Absent in the node.json of a node joined before it was
   * given (the agent then keeps none and says so).
   */
  firewall?: SiteFirewallPolicy | null
}

/**
 * A node's data folder (`/var/lib/berth-node`, mode 0700): node.json, node.key (the node's key,
 * made on the node; 0600), node.pem (its certificate, from the join), client-ca.pem (the CA of
 * the only client it accepts). Every file is written whole (temporary file and rename), 0600.
 */
export class NodeFiles {
  constructor(readonly dir: string) {}

  get joined(): boolean {
    return existsSync(join(this.dir, 'node.json'))
  }

  /** The key first, before the join: if anything fails after the control plane signed, the key is not lost. */
  writeKey(keyPem: string): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    writePrivateFile(join(this.dir, 'node.key'), keyPem)
  }

  /** The join's answer; node.json last, so that a folder with node.json is a whole one. */
  writeJoined(identity: NodeIdentity, certificate: string, clientCa: string, swarmToken: string): void {
    writePrivateFile(join(this.dir, 'node.pem'), certificate)
    writePrivateFile(join(this.dir, 'client-ca.pem'), clientCa)
    writePrivateFile(join(this.dir, 'swarm-token'), swarmToken)
    this.writeIdentity(identity)
  }

  /** The Swarm's worker join token the join answered (kept until the Swarm join is done). */
  swarmToken(): string {
    return readFileSync(join(this.dir, 'swarm-token'), 'utf8')
  }

  /** Forgets the Swarm's join token once the engine joined: it would let any box join the Swarm. */
  dropSwarmToken(): void {
    rmSync(join(this.dir, 'swarm-token'), { force: true })
  }

  writeIdentity(identity: NodeIdentity): void {
    writePrivateFile(join(this.dir, 'node.json'), `${JSON.stringify(identity, null, 2)}\n`)
  }

  /** node.json; throws naming the folder when the node has not joined. */
  identity(): NodeIdentity {
    const file = join(this.dir, 'node.json')
    if (!existsSync(file)) throw new Error(`${file} does not exist: this box has not joined a cluster (berth node join), or its data is elsewhere (--data)`)
    return JSON.parse(readFileSync(file, 'utf8')) as NodeIdentity
  }

  tls(): AgentTls {
    const read = (name: string) => readFileSync(join(this.dir, name), 'utf8')
    return { clientCa: read('client-ca.pem'), cert: read('node.pem'), key: read('node.key') }
  }
}
