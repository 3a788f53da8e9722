import type { TCPSocketListener } from 'bun'
import type { Logger } from '../../lib/logger'
import type { KernelForwards } from './kernel-forwards'
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
 * The agent's site forwards (the openForward route and AGENT_STREAMS.forward of contract/routes.ts): one TCP
 * listener per site on the node's private address, on a port the kernel picks, that accepts
 * connections from the control address only and pipes each one, byte for byte, to the site's
 * container. The control plane's edge connects to it as it would to a local container.
 *
 * With `kernel` (berth node serve), the kernel carries the control plane's connections instead:
 * a DNAT rule per forward (kernel-forwards.ts), set before `open` answers. The listener stays,
 * as the port's reservation and as the relay for what the rules do not carry (any other source,
 * which it refuses; everything, when iptables fails).
 *
 * `open` is idempotent: the same slug keeps its port; a new target (the container was recreated
 * with another address) applies to the connections opened from then on. `close` ends the listener
 * and the connections through it.
 */
export class Forwards {
  private readonly bySlug = new Map<string, Forward>()

  constructor(private readonly o: { address: string; controlAddress: string; log: Logger; kernel?: KernelForwards | null }) {}

  /** Opens (or retargets) the forward of `slug`; resolves with its port, listening (and its kernel rule set). */
  async open(slug: string, target: ForwardTarget): Promise<number> {
    const existing = this.bySlug.get(slug)
    if (existing) {
      const moved = existing.target.address !== target.address || existing.target.port !== target.port
      existing.target = target
      if (moved) await this.syncKernel()
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
    await this.syncKernel()
    return forward.port
  }

  /** Closes the forward of `slug` (its kernel rule first) and every connection through it; false when it had none. */
  async close(slug: string): Promise<boolean> {
    const forward = this.bySlug.get(slug)
    if (!forward) return false
    this.bySlug.delete(slug)
    await this.syncKernel()
    forward.listener.stop(true)
    return true
  }

  /** The open forwards, slug → { port, target }. */
  list(): Map<string, { port: number; target: ForwardTarget }> {
    return new Map([...this.bySlug].map(([slug, f]) => [slug, { port: f.port, target: f.target }]))
  }

  /** Closes every listener (the agent's stop; it removes the kernel rules itself). */
  closeAll(): void {
    for (const forward of this.bySlug.values()) forward.listener.stop(true)
    this.bySlug.clear()
  }

  /** Gives the kernel the forwards as they are now (a no-op without it). */
  private async syncKernel(): Promise<void> {
    await this.o.kernel?.set([...this.bySlug].map(([slug, f]) => ({ slug, port: f.port, target: f.target })))
  }

  /** Logs a connection from another address than the control plane's; false (it is closed). */
  private refused(slug: string, remote: string): boolean {
    this.o.log.warn('forward connection refused: not from the control address', { slug, from: remote })
    return false
  }
}
