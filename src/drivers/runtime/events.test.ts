import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { EngineLink } from './engine-link'
import { watchSiteEvents, type WatchTiming } from './events'
import { LABEL } from './site-container'
import type { SiteEvent, SiteWatch } from './types'

/**
 * The watcher against a stand-in engine on a Unix socket that speaks just enough of the Docker
 * API (HEAD /_ping, GET /events) and can fail the ways a real one is seen to but cannot be made
 * to on demand: restart without the event stream's close reaching Berth, or stop answering
 * while keeping every connection open. The real engine restarting: test/engine-restart.solo.e2e.
 */
class FakeEngine {
  private server: Server | null = null
  private sockets = new Set<Socket>()
  streams: Socket[] = []
  requests: string[] = []
  /** While true, requests are read and never answered; nothing is closed. */
  silent = false
  /** While true, GET /events is read and never answered (pings are). */
  holdEvents = false

  constructor(readonly path: string) {}

  async start(): Promise<void> {
    const server = createServer((socket) => this.accept(socket))
    await new Promise<void>((done) => server.listen(this.path, done))
    this.server = server
  }

  /** Writes an event, as the engine does, on every open event stream. */
  emit(event: Record<string, unknown>): void {
    const line = JSON.stringify(event) + '\n'
    for (const s of this.streams) s.write(`${Buffer.byteLength(line).toString(16)}\r\n${line}\r\n`)
  }

  /**
   * A restart whose end never reaches the event streams: the listening socket and every other
   * connection go, a new engine listens on the same path, and the old streams stay open.
   */
  async restartLeavingStreamsOpen(): Promise<void> {
    const old = new Set(this.streams)
    await this.stopListening()
    for (const s of this.sockets) if (!old.has(s)) s.destroy()
    this.streams = []
    await this.start()
  }

  async stop(): Promise<void> {
    await this.stopListening()
    for (const s of this.sockets) s.destroy()
    this.streams = []
  }

  /** Stops accepting and removes the socket file, as a stopping dockerd does (open connections stay). */
  private async stopListening(): Promise<void> {
    this.server?.close()
    this.server = null
    rmSync(this.path, { force: true })
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => {})
    let buffered = ''
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1')
      let end: number
      while ((end = buffered.indexOf('\r\n\r\n')) >= 0) {
        const head = buffered.slice(0, end)
        buffered = buffered.slice(end + 4)
        const [method, target] = head.split(' ')
        this.requests.push(`${method} ${target!.split('?')[0]}`)
        if (this.silent) continue
        if (method === 'HEAD' && target === '/_ping') socket.write('HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\n\r\n')
        else if (method === 'GET' && target!.startsWith('/events')) {
          if (this.holdEvents) continue
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')
          this.streams.push(socket)
        } else socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n')
      }
    })
  }
}

// An answer is given 1 s: a busy test machine can hold the event loop for a few hundred ms.
const FAST: WatchTiming = { checkEveryMs: 50, answerWithinMs: 1_000, firstRetryMs: 20, maxRetryMs: 50 }
const INSTANCE = 'abcd1234'

let dir: string
let engine: FakeEngine
let watch: SiteWatch | undefined
const log = memoryLogger()
let events: SiteEvent[]
let reconnects: number
let reachable: boolean[]

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-events-'))
  engine = new FakeEngine(join(dir, 'docker.sock'))
  log.lines.length = 0
  events = []
  reconnects = 0
  reachable = []
})

afterEach(async () => {
  watch?.close()
  watch = undefined
  await engine.stop()
  rmSync(dir, { recursive: true, force: true })
})

function startWatching(): void {
  watch = watchSiteEvents(
    { socketPath: engine.path, instanceId: INSTANCE, log, timing: FAST },
    { onEvent: (e) => events.push(e), onReconnect: () => reconnects++, onReachable: (r) => reachable.push(r) },
  )
}

const dieEvent = (slug: string, containerId = `c-${slug}`) => ({
  Type: 'container', Action: 'die', Actor: { ID: containerId, Attributes: { [LABEL.instance]: INSTANCE, [LABEL.slug]: slug, [LABEL.siteId]: `id-${slug}` } },
})
const logged = (msg: string) => log.lines.filter((l) => l.msg === msg).length

async function until(check: () => boolean, ms = 3_000): Promise<number> {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > ms) throw new Error(`condition not met within ${ms} ms; log: ${JSON.stringify(log.lines)}`)
    await Bun.sleep(5)
  }
  return performance.now() - started
}

describe('watchSiteEvents', () => {
  it("reports its sites' container events and says the engine answers", async () => {
    await engine.start()
    startWatching()
    await until(() => engine.streams.length === 1)
    // A site's database (issue 40) carries the site's labels and a role: it is no site's container.
    const dbDie = dieEvent('shop', 'c-shop-db-main')
    engine.emit({ ...dbDie, Actor: { ...dbDie.Actor, Attributes: { ...dbDie.Actor.Attributes, 'dev.berth.role': 'database' } } })
    engine.emit(dieEvent('shop'))
    engine.emit({ Type: 'container', Action: 'exec_die', Actor: { ID: 'x', Attributes: { [LABEL.slug]: 'shop', [LABEL.siteId]: 'id' } } })
    await until(() => events.length === 1)
    expect(events).toEqual([{ action: 'die', slug: 'shop', siteId: 'id-shop', containerId: 'c-shop' }])
    expect(reachable).toEqual([true])
    expect(reconnects).toBe(0)
  })

  it('notices an engine restart whose end never reaches the stream, follows the new engine and compares everything', async () => {
    await engine.start()
    startWatching()
    await until(() => engine.streams.length === 1)
    for (let round = 1; round <= 3; round++) {
      await engine.restartLeavingStreamsOpen()
      // The liveness check's connection closed with the old engine: a drop, however quiet the stream.
      const took = await until(() => reconnects === round && engine.streams.length === 1)
      expect(took).toBeLessThan(FAST.checkEveryMs + FAST.answerWithinMs + 2 * FAST.maxRetryMs)
      expect(logged('the engine event stream ended; reconnecting')).toBe(round)
      expect(logged('following the engine events again')).toBe(round)
    }
    // Events come from the new engine's stream.
    engine.emit(dieEvent('blog'))
    await until(() => events.some((e) => e.slug === 'blog'))
  })

  it('treats an engine that stops answering (connections open) as a drop, and says it is unreachable until it answers', async () => {
    await engine.start()
    startWatching()
    await until(() => engine.streams.length === 1)
    engine.silent = true
    await until(() => reachable.at(-1) === false)
    expect(log.lines.find((l) => l.msg === 'the engine event stream ended; reconnecting')?.reason).toMatch(/did not answer within 1000 ms/)
    expect(reconnects).toBe(0)
    engine.silent = false
    await until(() => reconnects === 1)
    expect(reachable).toEqual([true, false, true])
    engine.emit(dieEvent('shop'))
    await until(() => events.length === 1)
  })

  it('drops a stream whose end reaches it, and follows an engine that was not there at start', async () => {
    startWatching()
    await until(() => reachable.length === 1)
    expect(reachable).toEqual([false])
    expect(logged('cannot follow the engine events yet; retrying')).toBe(1)
    await engine.start()
    await until(() => reconnects === 1)
    await engine.stop()
    await until(() => reachable.at(-1) === false)
    expect(logged('the engine event stream ended; reconnecting')).toBe(1)
    await engine.start()
    await until(() => reconnects === 2)
    expect(reachable).toEqual([false, true, false, true])
  })

  it('gives up on an event stream whose answer does not come, and opens another', async () => {
    await engine.start()
    engine.holdEvents = true
    startWatching()
    await until(() => reachable.length === 1)
    expect(reachable).toEqual([false])
    expect(log.lines.find((l) => l.msg === 'cannot follow the engine events yet; retrying')?.error).toBe('the engine did not open its event stream within 1000 ms')
    engine.holdEvents = false
    await until(() => reconnects === 1 && engine.streams.length === 1)
    expect(reachable).toEqual([false, true])
  })

  it('stops for good when closed: no check, no reconnect', async () => {
    await engine.start()
    startWatching()
    await until(() => engine.streams.length === 1)
    watch!.close()
    const asked = engine.requests.length
    await Bun.sleep(FAST.checkEveryMs * 4)
    expect(engine.requests.length).toBe(asked)
  })
})

describe('EngineLink', () => {
  it('asks on one connection until the engine restarts, then fails for good', async () => {
    await engine.start()
    const link = new EngineLink(engine.path, 500)
    for (let i = 0; i < 3; i++) await link.check()
    expect(engine.requests).toEqual(['HEAD /_ping', 'HEAD /_ping', 'HEAD /_ping'])
    await engine.restartLeavingStreamsOpen()
    // The close, or a write to the closed connection if that comes first.
    const failure = await link.check().catch((err: Error) => err)
    expect(String(failure)).toMatch(/closed the connection|EPIPE/)
    await expect(link.check()).rejects.toBe(failure)
    await new EngineLink(engine.path, 500).check()
  })

  it('fails when the engine does not answer in time, or is not there', async () => {
    await engine.start()
    engine.silent = true
    await expect(new EngineLink(engine.path, 100).check()).rejects.toThrow('the engine did not answer within 100 ms')
    await expect(new EngineLink(join(dir, 'none.sock'), 100).check()).rejects.toThrow(/ENOENT/)
  })
})
