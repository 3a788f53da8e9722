/**
 * `bun run bench:console [--keys 1000]`: the console's echo latency (issue 26) on the compiled
 * binary, with one purchased static site on the real Docker engine: the time from a key sent
 * over the console's WebSocket to its echo coming back (the shell's line editor echoes it), p50
 * and p95 over `keys` keystrokes.
 *
 * Reference measured in the same run, interleaved in blocks of 100 keys so that load from
 * neighbours on the shared machine hits both alike: `docker exec -it` of a shell in the same
 * container, run under a local pseudo-terminal (Bun.spawn's `terminal`), typed to the same way:
 * what an admin on the box gets from the engine's own client. Both go through the engine's
 * hijacked exec stream; Berth adds its WebSocket and its process in between.
 */
import { join } from 'node:path'
import { docker, removeSitesOf } from '../test/helpers/sites'
import { cleanup, cleanupOnExit, snapshotBinary, startBerth, tempDir, track, waitFor } from './processes'
import { buySite, instanceOf } from './sites'

const keys = Number(process.argv[process.argv.indexOf('--keys') + 1]) || 1000
const BLOCK = 100
/** Keys typed on one line before it is erased (Ctrl-U): long lines make the editor redraw. */
const LINE = 50
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!

/** Something keys are typed into, whose output is heard. */
interface Typist {
  send(bytes: Uint8Array): void
  onOutput(listener: (bytes: Uint8Array) => void): void
  close(): void
}

/**
 * A Typist over `io`: what it hears goes to the listener; busybox's line editor asks where the
 * cursor is (ESC [6n) before its first prompt, answered as a terminal would. `atPrompt` waits
 * for the prompt and then for quiet.
 */
function heard(io: { send(bytes: Uint8Array): void; close(): void }) {
  let listener: (bytes: Uint8Array) => void = () => {}
  let output = ''
  let lastAt = performance.now()
  return {
    ...io,
    onOutput: (l: (bytes: Uint8Array) => void) => void (listener = l),
    hear(bytes: Uint8Array) {
      const text = new TextDecoder().decode(bytes)
      output += text
      lastAt = performance.now()
      if (text.includes('\x1b[6n')) io.send(new TextEncoder().encode('\x1b[24;5R'))
      listener(bytes)
    },
    async atPrompt(what: string) {
      await waitFor(async () => /\$ /.test(output) && performance.now() - lastAt > 300, 10_000).catch(() => {
        throw new Error(`no prompt from ${what}: ${JSON.stringify(output)}`)
      })
    },
  }
}

/** Types `count` letters into `t`, timing each from its send to its echo; erases the line every LINE keys. */
async function typeKeys(t: Typist, count: number, into: number[]): Promise<void> {
  let heard: ((bytes: Uint8Array) => void) | null = null
  t.onOutput((bytes) => heard?.(bytes))
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % LINE === 0) {
      t.send(new Uint8Array([0x15]))
      await Bun.sleep(20)
    }
    const letter = 97 + (i % 26)
    const echoed = new Promise<void>((done) => (heard = (bytes) => bytes.includes(letter) && done()))
    const started = performance.now()
    t.send(new Uint8Array([letter]))
    await echoed
    into.push(performance.now() - started)
    heard = null
  }
  t.send(new Uint8Array([0x15]))
  await Bun.sleep(20)
}

/** A console session over Berth's WebSocket, at its prompt. */
async function berthConsole(url: string, key: string, slug: string): Promise<Typist> {
  const res = await fetch(`${url}/api/v1/sites/${slug}/console/`, { method: 'POST', headers: { authorization: `Bearer ${key}` } })
  const { websocket_url } = (await res.json()).data
  const ws = new WebSocket(websocket_url)
  ws.binaryType = 'arraybuffer'
  const t = heard({ send: (bytes) => ws.send(bytes), close: () => ws.close() })
  ws.onmessage = (e) => {
    if (typeof e.data !== 'string') t.hear(new Uint8Array(e.data as ArrayBuffer))
  }
  await new Promise((done) => (ws.onopen = done))
  await t.atPrompt('the console')
  return t
}

/** `docker exec -it CONTAINER sh` under a local pseudo-terminal, at its prompt. */
async function dockerExec(containerId: string): Promise<Typist> {
  let t: ReturnType<typeof heard> | null = null
  const proc = track(Bun.spawn(['docker', 'exec', '-it', '-u', '1000:1000', '-w', '/home/site', containerId, 'sh'], {
    terminal: { cols: 80, rows: 24, data: (_t, bytes) => t?.hear(bytes) },
  }))
  t = heard({ send: (bytes) => proc.terminal!.write(bytes), close: () => proc.kill() })
  await t.atPrompt('docker exec')
  return t
}

async function main() {
  cleanupOnExit()
  snapshotBinary()
  const dataDir = tempDir('berth-bench-console-')
  const berth = await startBerth(dataDir)
  const instance = instanceOf(dataDir)!
  try {
    const { slug, key } = await buySite(berth.url, 'bench-console')
    const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instance}`, `dev.berth.site-slug=${slug}`] } })
    const viaBerth = await berthConsole(berth.url, key, slug)
    const viaDocker = await dockerExec(container!.Id)
    // Warm both ways up (first frames, JIT) before timing.
    await typeKeys(viaBerth, 50, [])
    await typeKeys(viaDocker, 50, [])
    const berthMs: number[] = []
    const dockerMs: number[] = []
    for (let done = 0; done < keys; done += BLOCK) {
      const n = Math.min(BLOCK, keys - done)
      await typeKeys(viaBerth, n, berthMs)
      await typeKeys(viaDocker, n, dockerMs)
    }
    viaBerth.close()
    viaDocker.close()
    const row = (name: string, ms: number[]) => `| ${name} | ${percentile(ms, 50).toFixed(2)} | ${percentile(ms, 95).toFixed(2)} |`
    console.log(`\nConsole echo latency, ${keys} keystrokes each, interleaved in blocks of ${BLOCK}:\n`)
    console.log('| path | p50 ms | p95 ms |\n| --- | --- | --- |')
    console.log(row('Berth console (WebSocket)', berthMs))
    console.log(row('docker exec -it (local PTY)', dockerMs))
    console.log(`\nratio Berth / docker exec: p50 ${(percentile(berthMs, 50) / percentile(dockerMs, 50)).toFixed(2)}, p95 ${(percentile(berthMs, 95) / percentile(dockerMs, 95)).toFixed(2)}`)
  } finally {
    await berth.stop()
    await removeSitesOf(instance)
    cleanup()
  }
}

await main()
