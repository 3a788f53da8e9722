import type { Server } from 'bun'
import { createApp } from './api/app'
import { runMaintenance, type Services } from './compose'

export interface RunningServer {
  server: Server<undefined>
  url: string
  stop(): Promise<void>
}

const MAINTENANCE_MS = 30_000

/**
 * Starts the single listener. Every request goes through here: its socket peer is recorded for
 * rate limiting, then the API answers. (The edge proxy for site host names joins this dispatch.)
 */
export function startServer(s: Services): RunningServer {
  const app = createApp(s)
  app.compile()
  const { hostname, port } = s.config.server.listen
  const server = Bun.serve({
    hostname,
    port,
    // Bodies are limited per route by the JSON parser, with an enveloped 413; this only stops
    // absurd uploads before they are buffered.
    maxRequestBodySize: 1024 * 1024 * 1024,
    fetch(request, srv) {
      const peer = srv.requestIP(request)
      if (peer) s.clients.peers.set(request, peer.address)
      return app.fetch(request)
    },
  })
  const timer = setInterval(() => {
    try {
      runMaintenance(s)
    } catch (err) {
      s.log.error('maintenance failed', { error: (err as Error).message })
    }
  }, MAINTENANCE_MS)
  const url = `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${server.port}`
  return {
    server,
    url,
    async stop() {
      clearInterval(timer)
      await server.stop()
      runMaintenance(s)
    },
  }
}
