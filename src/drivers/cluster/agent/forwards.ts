import type { TCPSocketListener } from 'bun'
import type { Logger } from '../../../lib/logger'
import { fromControl } from './remote'
import { startRelay } from './tcp-relay'

/** Where a forward sends its connections: a site container's address and web port on this node. */
export interface ForwardTarget {
  address: string
  port: number
}

interface Forward {
  listener: TCPSocketListener<unknown>
  port: number
  target: ForwardTarget
}

/**
 * The agent's site forwards (`PUT /v1/forwards/{slug}`, drivers/cluster/types.ts): one TCP
 * listener per site on the node's private address, on a port the kernel picks, that accepts
 * connections from the control address only and pipes each one, byte for byte, to the site's
 * container. The control plane's edge connects to it as it would to a local container.
 *
 * `open` is idempotent: the same slug keeps its port; a new target (the container was recreated
 * with another address) applies to the connections opened from then on. `close` ends the listener
 * and the connections through it.
 */
export class Forwards {
  private readonly bySlug = new Map<string, Forward>()

  constructor(private readonly o: { address: string; controlAddress: string; log: Logger }) {}

  /** Opens (or retargets) the forward of `slug`; resolves with its port, listening. */
  async open(slug: string, target: ForwardTarget): Promise<number> {
    const existing = this.bySlug.get(slug)
    if (existing) {
      existing.target = target
      return existing.port
    }
    const forward = { target } as Forward
    forward.listener = startRelay({
      address: this.o.address,
      allow: (remote) => fromControl(remote, this.o.controlAddress) || this.refused(slug, remote),
      target: () => forward.target,
    }) as TCPSocketListener<unknown>
    forward.port = forward.listener.port
    this.bySlug.set(slug, forward)
    return forward.port
  }

  /** Closes the forward of `slug` and every connection through it; false when it had none. */
  close(slug: string): boolean {
    const forward = this.bySlug.get(slug)
    if (!forward) return false
    this.bySlug.delete(slug)
    forward.listener.stop(true)
    return true
  }

  /** The open forwards, slug → { port, target }. */
  list(): Map<string, { port: number; target: ForwardTarget }> {
    return new Map([...this.bySlug].map(([slug, f]) => [slug, { port: f.port, target: f.target }]))
  }

  closeAll(): void {
    for (const slug of [...this.bySlug.keys()]) this.close(slug)
  }

  /** Logs a connection from another address than the control plane's; false (it is closed). */
  private refused(slug: string, remote: string): boolean {
    this.o.log.warn('forward connection refused: not from the control address', { slug, from: remote })
    return false
  }
}
