import { afterEach, describe, expect, it } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { startRelay } from './tcp-relay'

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

/** A TCP server on 127.0.0.1 (allowHalfOpen: it may answer after the client's FIN). */
async function serve(onConnection: (s: Socket) => void): Promise<number> {
  const server: Server = createServer({ allowHalfOpen: true }, onConnection)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanups.push(() => server.close())
  return (server.address() as { port: number }).port
}

function relayTo(port: number, allow = (_: string) => true) {
  const relay = startRelay({ address: '127.0.0.1', allow, target: () => ({ address: '127.0.0.1', port }) })
  cleanups.push(() => relay.stop(true))
  return relay.port
}

/** Sends `input` and half-closes, then collects everything until the relay closes. */
function exchange(port: number, input: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const s = connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () => s.end(input))
    s.on('data', (d: Buffer) => chunks.push(d))
    s.on('end', () => resolve(Buffer.concat(chunks)))
    // A reset is a refusal too: what came before it is the answer.
    s.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(Buffer.concat(chunks)) : reject(err)))
    s.setTimeout(20_000, () => reject(new Error('timed out')))
  })
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

describe('the TCP relay', () => {
  it('passes 32 MiB each way whole, with a half-close: the target answers after the client\'s FIN', async () => {
    // The target reads everything, then answers its digest and 32 MiB of its own.
    const reply = randomBytes(32 << 20)
    const port = await serve((s) => {
      const hash = createHash('sha256')
      s.on('data', (d) => hash.update(d))
      s.on('end', () => {
        s.write(`${hash.digest('hex')}\n`)
        s.end(reply)
      })
    })
    const input = randomBytes(32 << 20)
    const answer = await exchange(relayTo(port), input)
    const newline = answer.indexOf(10)
    expect(answer.subarray(0, newline).toString()).toBe(sha(input))
    expect(sha(answer.subarray(newline + 1))).toBe(sha(reply))
  }, 60_000)

  it('closes a connection it does not allow, unanswered, and one whose target is down', async () => {
    const port = await serve((s) => s.end('hello'))
    expect((await exchange(relayTo(port, () => false), Buffer.from('x'))).length).toBe(0)
    const down = await serve(() => {})
    cleanups.pop()!() // that target's server closes: nothing listens there now
    expect((await exchange(relayTo(down), Buffer.from('x'))).length).toBe(0)
  })

  it('closes the client once the target closes, after its last bytes', async () => {
    const port = await serve((s) => s.end('bye'))
    const got = await new Promise<string>((resolve, reject) => {
      let text = ''
      const s = connect({ host: '127.0.0.1', port: relayTo(port) })
      s.on('data', (d) => (text += d))
      s.on('close', () => resolve(text))
      s.on('error', reject)
    })
    expect(got).toBe('bye')
  })
})
