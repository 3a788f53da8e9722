import { createConnection, createServer, type Server } from 'node:net'
import { rmSync } from 'node:fs'

/**
 * A Unix socket in front of a real Docker engine's socket that forwards everything unchanged,
 * except that it can hold one request for a while: the engine and its answers stay real, only
 * the moment a call lands moves, so a test can open the window of a race deterministically
 * (a request that lands later than it would on a loaded machine).
 *
 * `hold(pattern, ms)` arms a hold of the next request whose first line (`POST /v1.45/services/x/update`)
 * matches; it resolves when that request arrived (and is being held). Bytes of the connection
 * after it wait behind it, in order.
 *
 * @example
 * const slow = await slowSocket('/tmp/lab/a/sock', '/tmp/lab/a/slow.sock')
 * const held = slow.hold(/^POST \S*\/services\/\S+\/update/, 800)
 * void doTheMove()
 * await held  // the update is now held for 800 ms
 */
export interface SlowSocket {
  path: string
  hold(firstLine: RegExp, ms: number): Promise<string>
  close(): Promise<void>
}

const METHOD = /^(GET|POST|PUT|DELETE|HEAD) /

export async function slowSocket(target: string, path: string): Promise<SlowSocket> {
  const holds: { pattern: RegExp; ms: number; arrived: (line: string) => void }[] = []
  const open = new Set<{ destroy(): void }>()
  rmSync(path, { force: true })
  const server: Server = createServer((client) => {
    const upstream = createConnection(target)
    open.add(client).add(upstream)
    upstream.pipe(client)
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
    client.on('close', () => upstream.destroy())
    let order: Promise<void> = Promise.resolve()
    client.on('data', (chunk: Buffer) => {
      const head = chunk.subarray(0, 300).toString('latin1')
      const line = METHOD.test(head) ? head.split('\r\n')[0]! : ''
      const i = line ? holds.findIndex((h) => h.pattern.test(line)) : -1
      const hold = i >= 0 ? holds.splice(i, 1)[0]! : null
      if (hold) {
        client.pause()
        hold.arrived(line)
      }
      order = order.then(async () => {
        if (hold) await Bun.sleep(hold.ms)
        upstream.write(chunk)
        if (hold) client.resume()
      })
    })
  })
  await new Promise<void>((done) => server.listen(path, done))
  return {
    path,
    hold: (pattern, ms) => new Promise((arrived) => holds.push({ pattern, ms, arrived })),
    close: () => new Promise((done) => {
      server.close(() => done())
      for (const socket of open) socket.destroy()
    }),
  }
}
