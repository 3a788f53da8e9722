import { connect, type Socket } from 'node:net'
import { createServer, type TLSSocket } from 'node:tls'
import type { Logger } from '../../lib/logger'
import type { AgentTls } from '../../drivers/cluster/types'
import { fromControl } from './remote'

/**
 * The engine pass-through (`https://{address}:{agentPort + 1}`, AGENT_STREAMS.engine of contract/routes.ts): a TLS
 * listener that asks for a client certificate of the cluster's client CA (so only the control
 * plane's) and pipes each connection, byte for byte, to the local Docker socket, as dockerd's own
 * `--tlsverify` listener would. A byte pipe, so hijacked exec and attach streams, event streams
 * and archive uploads pass as they are. Connections from any other address than the control
 * plane's are closed before their handshake.
 */
export async function startEngineProxy(o: { address: string; port: number; controlAddress: string; tls: AgentTls; dockerSocket: string; log: Logger }): Promise<EngineProxy> {
  const open = new Set<TLSSocket>()
  const server = createServer({ key: o.tls.key, cert: o.tls.cert, ca: o.tls.clientCa, requestCert: true, rejectUnauthorized: true, allowHalfOpen: true }, (client) => {
    if (!fromControl(client.remoteAddress, o.controlAddress)) {
      client.destroy()
      return
    }
    const engine = connect({ path: o.dockerSocket, allowHalfOpen: true })
    open.add(client)
    const end = () => {
      open.delete(client)
      client.destroy()
      engine.destroy()
    }
    client.on('error', end).on('close', end)
    engine.on('error', (err) => {
      o.log.warn('engine pass-through: the local engine is not answering', { socket: o.dockerSocket, error: err.message })
      end()
    }).on('close', end)
    client.pipe(engine)
    engine.pipe(client)
  })
  // Before the handshake: a stranger is not even shown the node's certificate.
  server.on('connection', (socket: Socket) => {
    if (!fromControl(socket.remoteAddress, o.controlAddress)) socket.destroy()
  })
  server.on('tlsClientError', (err, socket) => {
    o.log.info('engine pass-through: a handshake failed', { from: socket.remoteAddress, error: err.message })
  })
  await new Promise<void>((listening, failed) => {
    server.once('error', failed)
    server.listen({ host: o.address, port: o.port }, () => {
      server.off('error', failed)
      listening()
    })
  })
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((closed) => {
      server.close(() => closed())
      for (const c of open) c.destroy()
    }),
  }
}

export interface EngineProxy {
  port: number
  /** Stops listening and ends every connection through it (a hijacked stream too). */
  close(): Promise<void>
}
