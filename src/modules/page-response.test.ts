import { gzipSync, gunzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { WIDGET_TAG } from './chatbot/widget'
import { addToPage, RewrittenPages } from './page-response'

/**
 * One tenant's page is never served on another's origin (issue 23, part 8): the cache of
 * rewritten pages is shared by every site, so its key must name the site and a hit must be the
 * very bytes it was made from, whatever the hash says.
 */
const CHATBOT_ONLY = { seo: null, widget: WIDGET_TAG }
const page = (text: string) => `<!doctype html><html><head><title>${text}</title></head><body><p>${text}</p></body></html>`
const html = (body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) => new Response(body, { headers: { 'content-type': 'text/html; charset=utf-8', ...headers } })

/** Replaces Bun's hash (wyhash) for one test: every page then hashes to `value`. */
const realHash = Bun.hash
const forceHash = (value: number) => {
  ;(Bun as { hash: unknown }).hash = Object.assign(() => value, realHash)
}
afterEach(() => {
  ;(Bun as { hash: unknown }).hash = realHash
})

describe('addToPage and its cache of rewritten pages', () => {
  it("serves each site its own page when the hash collides (every page hashing alike), with the chatbot alone on", async () => {
    // A tenant who crafts a page colliding with another's under wyhash gets this: forced here.
    forceHash(42)
    const victim = page('victim-private-1')
    const attacker = page('attacker-pg-02xx')
    expect(attacker.length).toBe(victim.length)
    const first = await (await addToPage(html(victim), CHATBOT_ONLY, 'site-victim')).text()
    expect(first).toContain('victim-private-1')
    expect(first).toContain(WIDGET_TAG)
    for (const [body, site, own, other] of [[attacker, 'site-attacker', 'attacker-pg-02xx', 'victim-private-1'], [victim, 'site-victim', 'victim-private-1', 'attacker-pg-02xx'], [attacker, 'site-victim', 'attacker-pg-02xx', 'victim-private-1']]) {
      const served = await (await addToPage(html(body!), CHATBOT_ONLY, site!)).text()
      expect(served, `${site} serving ${own}`).toContain(own)
      expect(served, `${site} serving ${own}`).not.toContain(other)
      expect(served).toContain(WIDGET_TAG)
    }
  })

  it('the same for compressed pages: a collision never hands out the other bytes', async () => {
    forceHash(7)
    const a = gzipSync(page('gzip-page-aaaa'))
    const b = gzipSync(page('gzip-page-bbbb'))
    for (const [body, site, own] of [[a, 'site-a', 'aaaa'], [b, 'site-b', 'bbbb'], [a, 'site-b', 'aaaa']] as const) {
      const res = await addToPage(html(new Uint8Array(body), { 'content-encoding': 'gzip' }), CHATBOT_ONLY, site)
      expect(gunzipSync(new Uint8Array(await res.arrayBuffer())).toString()).toContain(`gzip-page-${own}`)
    }
  })

  it('two sites serving identical bytes each get the page rewritten with their own additions', async () => {
    const same = page('same-bytes')
    const a = await (await addToPage(html(same), { seo: { url: 'http://alpha.localhost/', fallbackTitle: 'alpha' }, widget: null }, 'site-alpha')).text()
    const b = await (await addToPage(html(same), { seo: { url: 'http://beta.localhost/', fallbackTitle: 'beta' }, widget: null }, 'site-beta')).text()
    expect(a).toContain('http://alpha.localhost/')
    expect(a).not.toContain('beta.localhost')
    expect(b).toContain('http://beta.localhost/')
    expect(b).not.toContain('alpha.localhost')
  })
})

describe('RewrittenPages', () => {
  const bytes = (text: string) => new TextEncoder().encode(text)
  const out = (text: string) => new Uint8Array(bytes(text))

  it('finds an entry only for its site, its additions and its very bytes, the hash notwithstanding', () => {
    const cache = new RewrittenPages({ maxEntries: 10, maxBytes: 1 << 20, hash: () => 1 })
    cache.set('a', 'w', bytes('page-1'), out('rewritten-1'))
    expect(cache.get('a', 'w', bytes('page-1'))).toEqual(out('rewritten-1'))
    expect(cache.get('a', 'w', bytes('page-2'))).toBeUndefined()
    expect(cache.get('b', 'w', bytes('page-1'))).toBeUndefined()
    expect(cache.get('a', 'x', bytes('page-1'))).toBeUndefined()
    // A colliding page replaces the entry, and the first is then a miss, never the other's result.
    cache.set('a', 'w', bytes('page-2'), null)
    expect(cache.get('a', 'w', bytes('page-2'))).toBeNull()
    expect(cache.get('a', 'w', bytes('page-1'))).toBeUndefined()
  })

  it('keeps a copy of the source: the caller reusing its buffer changes nothing', () => {
    const cache = new RewrittenPages({ maxEntries: 10, maxBytes: 1 << 20 })
    const source = bytes('page-x')
    cache.set('a', '', source, out('done'))
    source[0] = 0x71
    expect(cache.get('a', '', bytes('page-x'))).toEqual(out('done'))
    expect(cache.get('a', '', source)).toBeUndefined()
  })

  it('drops the oldest past its entries or bytes (sources and results counted)', () => {
    const cache = new RewrittenPages({ maxEntries: 2, maxBytes: 40 })
    cache.set('a', '', bytes('one'), out('1'))
    cache.set('a', '', bytes('two'), out('2'))
    cache.set('a', '', bytes('three'), out('3'))
    expect(cache.get('a', '', bytes('one'))).toBeUndefined()
    expect(cache.get('a', '', bytes('three'))).toEqual(out('3'))
    cache.set('b', '', bytes('x'.repeat(30)), out('y'.repeat(9)))
    expect(cache.get('a', '', bytes('two'))).toBeUndefined()
    expect(cache.get('a', '', bytes('three'))).toBeUndefined()
    expect(cache.get('b', '', bytes('x'.repeat(30)))).toEqual(out('y'.repeat(9)))
  })
})
