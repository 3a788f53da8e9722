import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { ConsoleClient, openTicket } from './helpers/console'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The console's bounds (issue 36, item 7) on the compiled binary and real sites: what a client
 * floods into one console never piles up in Berth (the session ends with an error frame), and
 * one account asking for tickets without end leaves another account's ticket valid.
 */
let berth: Berth
let alice: { slug: string; key: string }
let bob: { slug: string; key: string }

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  ;[alice, bob] = await Promise.all(['flood', 'bystander'].map(async (stem) => {
    const slug = uniqueSlug(stem)
    const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    return { slug, key: data.api_key as string }
  }))
}, 180_000)
afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
})

/** The resident memory of the berth serve process, in bytes (/proc/PID/status, VmRSS). */
function rss(): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${berth.proc.pid}/status`, 'utf8'))
  if (!kb) throw new Error('no VmRSS in /proc/PID/status')
  return Number(kb[1]) * 1024
}

const MiB = 1024 * 1024

/** A session that works: it echoes, then exits 0. */
async function usable(site: { slug: string; key: string }): Promise<void> {
  const c = new ConsoleClient((await openTicket(berth.url, site.key, site.slug)).websocket_url)
  await c.opened
  c.type('echo "ok-$((6*7))"; exit\n')
  await c.waitFor(/ok-42/)
  expect((await c.ending()).control).toEqual({ type: 'exit', code: 0 })
}

/**
 * Sends up to 300 MiB of keys into a new console of `site` as fast as the socket takes them
 * (64 KiB frames, at most 8 MiB waiting in this client), from the moment it opened or, with
 * `afterPrompt`, once its shell answered. Returns how the session ended and berth serve's RSS
 * before and at its highest meanwhile (sampled every 10 ms).
 */
async function flood(site: { slug: string; key: string }, afterPrompt: boolean) {
  const t = await openTicket(berth.url, site.key, site.slug)
  const ws = new WebSocket(t.websocket_url)
  ws.binaryType = 'arraybuffer'
  const controls: Record<string, unknown>[] = []
  let output = ''
  ws.onmessage = (e) => {
    if (typeof e.data === 'string') controls.push(JSON.parse(e.data))
    else output += new TextDecoder().decode(e.data as ArrayBuffer)
  }
  const closed = new Promise<{ code: number; reason: string }>((done) => (ws.onclose = (e) => done({ code: e.code, reason: e.reason })))
  await new Promise<void>((done, fail) => {
    ws.onopen = () => done()
    ws.onerror = () => fail(new Error('the console did not open'))
  })
  if (afterPrompt) {
    ws.send(new TextEncoder().encode('echo "ready-$((6*7))"\n'))
    const deadline = Date.now() + 10_000
    while (!output.includes('ready-42')) {
      if (Date.now() > deadline) throw new Error(`the shell did not answer: ${JSON.stringify(output)}`)
      await Bun.sleep(10)
    }
  }
  Bun.gc(true)
  const before = rss()
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10)
  const chunk = new Uint8Array(64 * 1024).fill(0x61)
  const started = Date.now()
  let sent = 0
  while (sent < 300 * MiB && ws.readyState === WebSocket.OPEN) {
    if (ws.bufferedAmount > 8 * MiB) {
      await Bun.sleep(1)
      continue
    }
    ws.send(chunk)
    sent += chunk.byteLength
    if (sent % (4 * MiB) === 0) await Bun.sleep(0)
  }
  const close = await Promise.race([closed, Bun.sleep(30_000).then(() => null)])
  clearInterval(sampler)
  peak = Math.max(peak, rss())
  if (!close) ws.close()
  console.log(`console flood${afterPrompt ? ' after the prompt' : ''}: ${(sent / MiB).toFixed(0)} MiB sent in ${Date.now() - started} ms; berth serve's RSS ${(before / MiB).toFixed(1)} MiB before, ${(peak / MiB).toFixed(1)} MiB at most (+${((peak - before) / MiB).toFixed(1)} MiB)`)
  return { sent, close, last: controls.at(-1), grew: peak - before }
}

describe('console input', () => {
  for (const afterPrompt of [false, true]) {
    it(`ends a session flooded with 300 MiB ${afterPrompt ? 'once its shell answered' : 'from its first moment'} with an error frame; Berth's memory grows by less than 32 MiB`, async () => {
      await usable(alice)
      const f = await flood(alice, afterPrompt)
      expect(f.close, `the session did not end; ${(f.sent / MiB).toFixed(0)} MiB sent`).not.toBeNull()
      expect(f.last).toEqual({ type: 'error', code: 'input_overflow', message: expect.stringContaining('more than 4 MiB of input was waiting for the shell') })
      expect(f.close!.code).toBe(1000)
      expect(f.grew).toBeLessThan(32 * MiB)
      // The site and its consoles go on.
      await usable(alice)
    }, 120_000)
  }
})

describe('console tickets', () => {
  it("leave another account's ticket valid while one account asks for 20,050 (refused past the limit: 429)", async () => {
    const kept = await openTicket(berth.url, bob.key, bob.slug)
    let issued = 0
    let refused: Response | null = null
    const ask = () => fetch(`${berth.url}/api/v1/sites/${alice.slug}/console/`, { method: 'POST', headers: { authorization: `Bearer ${alice.key}` } })
    let next = 0
    const started = Date.now()
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < 20_050) {
        next++
        const res = await ask()
        if (res.status === 201) issued++
        else {
          expect(res.status).toBe(429)
          refused ??= res
        }
        await res.arrayBuffer()
      }
    }))
    console.log(`ticket flood: 20,050 asks in ${Date.now() - started} ms`)
    // The other account's ticket is still valid (its page loads; a forgotten ticket is a 404).
    expect((await fetch(kept.page_url)).status).toBe(200)
    expect(issued).toBe(6)
    const r = refused as Response | null
    expect(r).not.toBeNull()
    // The refusal is the API's envelope, with the limit in its message and when to retry.
    const again = await api(berth.url, 'POST', `/sites/${alice.slug}/console/`, { key: alice.key })
    expect(again.status).toBe(429)
    expect(again.json.error.code).toBe('RATE_LIMITED')
    expect(again.json.error.message).toMatch(/^Site '[a-z0-9-]+' has 6 unused console tickets, the most it may; connect with one, or retry in \d+ seconds when the oldest expires\.$/)
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0)
    // The other account's ticket still opens its console.
    const c = new ConsoleClient(kept.websocket_url)
    await c.opened
    c.type('echo "still-$((6*7))"; exit\n')
    await c.waitFor(/still-42/)
    expect((await c.ending()).control).toEqual({ type: 'exit', code: 0 })
  }, 300_000)
})
