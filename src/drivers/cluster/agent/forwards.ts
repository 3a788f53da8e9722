import { connect, createServer, type Server, type Socket } from 'node:net'
import type { Logger } from '../../../lib/logger'
import { fromControl } from './remote'

/** Where a forward sends its connections: a site container's address and web port on this node. */
export interface ForwardTarget {
  address: string
  port: number
}

interface Forward {
  server: Server
  port: number
  target: ForwardTarget
  connections: Set<Socket>
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

  /** Opens (or retargets) the forward of `slug`; resolves with its port once it listens. */
  async open(slug: string, target: ForwardTarget): Promise<number> {
    const existing = this.bySlug.get(slug)
    if (existing) {
      existing.target = target
      return existing.port
    }
    const forward: Forward = { server: createServer({ allowHalfOpen: true }), port: 0, target, connections: new Set() }
    forward.server.on('connection', (client) => this.accept(slug, forward, client))
    await new Promise<void>((listening, failed) => {
      forward.server.once('error', failed)
      forward.server.listen({ host: this.o.address, port: 0 }, () => {
        forward.server.off('error', failed)
        listening()
      })
    })
    forward.port = (forward.server.address() as { port: number }).port
    // Two PUTs at once: the first to listen keeps the slug, the other closes its listener.
    const raced = this.bySlug.get(slug)
    if (raced) {
      forward.server.close()
      raced.target = target
      return raced.port
    }
    this.bySlug.set(slug, forward)
    return forward.port
  }

  /** Closes the forward of `slug` and every connection through it; false when it had none. */
  close(slug: string): boolean {
    const forward = this.bySlug.get(slug)
    if (!forward) return false
    this.bySlug.delete(slug)
    forward.server.close()
    for (const c of forward.connections) c.destroy()
    return true
  }

  /** The open forwards, slug → { port, target }. */
  list(): Map<string, { port: number; target: ForwardTarget }> {
    return new Map([...this.bySlug].map(([slug, f]) => [slug, { port: f.port, target: f.target }]))
  }

  closeAll(): void {
    for (const slug of [...this.bySlug.keys()]) this.close(slug)
  }

  private accept(slug: string, forward: Forward, client: Socket): void {
    if (!fromControl(client.remoteAddress, this.o.controlAddress)) {
      this.o.log.warn('forward connection refused: not from the control address', { slug, from: client.remoteAddress })
      client.destroy()
      return
    }
    const upstream = connect({ host: forward.target.address, port: forward.target.port, allowHalfOpen: true })
    forward.connections.add(client)
    client.setNoDelay(true)
    upstream.setNoDelay(true)
    const end = () => {
      forward.connections.delete(client)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
  }
}
