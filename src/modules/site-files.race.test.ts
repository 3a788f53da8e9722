import { spawn, type Subprocess } from 'bun'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { HostSiteFiles } from '../drivers/files/site-reader'
import { memoryLogger } from '../lib/logger'
import type { SiteTarget } from '../edge/types'
import { ChatbotService } from './chatbot/service'
import { SiteIndex } from './chatbot/site-index'
import { SiteModulesEdge } from './edge'
import { SeoEdge } from './seo/edge'
import { listPages, sitemapXml } from './seo/pages'
import { seoReport } from './seo/report'
import type { AiBudget } from './ai-calls'

/**
 * Issue 23, part 2: a tenant swaps a folder under public/ for a link to a folder outside the
 * home, over and over, from another process (as from a shell in the container: truly at the same
 * time as Berth), while every module that reads site files runs again and again on the real code
 * over a real folder tree. Berth runs as root: whatever a link reaches, it could read. The
 * outside folder's page (its title, its text, its file name) must never come out.
 */
const CANARY = 'Zyxwvcanary'
let root: string
let home: string
let swapper: Subprocess | null = null
const files = new HostSiteFiles(async () => home)
const RUN_MS = Number(process.env.RACE_MS ?? 2500)

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-swap-'))
  home = join(root, 'home')
  const outside = join(root, 'host')
  mkdirSync(join(home, 'public', 'blog'), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(home, 'public', 'index.html'), '<html lang="en"><head><title>Home</title></head><body><h1>Home</h1><p>Fresh bread daily.</p></body></html>')
  writeFileSync(join(home, 'public', 'blog', 'index.html'), '<html lang="en"><head><title>Blog</title></head><body><h1>Blog</h1><p>Our sourdough story.</p></body></html>')
  // The host's (or another tenant's) pages: same names as the blog's, and one of their own.
  for (const name of ['index.html', `${CANARY}-secret.html`]) {
    writeFileSync(join(outside, name), `<html lang="en"><head><title>${CANARY} title</title></head><body><h1>${CANARY}</h1><p>${CANARY} private words.</p></body></html>`)
  }
  symlinkSync(outside, join(home, 'public', 'blog.link'))
})
afterEach(async () => {
  swapper?.kill('SIGKILL')
  await swapper?.exited
  swapper = null
  restore()
})

/** Puts public/blog (the folder) and public/blog.link (the link) back, wherever the loop was killed. */
function restore(): void {
  const at = (n: string) => join(home, 'public', n)
  const isLink = (p: string) => lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() ?? false
  if (isLink(at('blog'))) renameSync(at('blog'), at('blog.link'))
  if (existsSync(at('blog.real'))) renameSync(at('blog.real'), at('blog'))
  expect([lstatSync(at('blog')).isDirectory(), isLink(at('blog.link'))]).toEqual([true, true])
}
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Starts the tenant's loop: public/blog is the real folder, then the link, then the folder again. */
function startSwapping(): void {
  const script = join(root, 'swap.js')
  writeFileSync(script, `
    const { renameSync } = require('node:fs')
    const dir = process.argv[2]
    const at = (n) => dir + '/' + n
    for (;;) {
      try {
        renameSync(at('blog'), at('blog.real'))
        renameSync(at('blog.link'), at('blog'))
        renameSync(at('blog'), at('blog.link'))
        renameSync(at('blog.real'), at('blog'))
      } catch {}
    }`)
  swapper = spawn([process.execPath, script, join(home, 'public')], { stdout: 'ignore', stderr: 'inherit' })
}

/** Runs `fn` again and again for RUN_MS while the tenant swaps; what it returned, joined. */
async function whileSwapping(fn: () => Promise<string>): Promise<{ runs: number; out: string[] }> {
  startSwapping()
  await Bun.sleep(50)
  const out: string[] = []
  const until = performance.now() + RUN_MS
  while (performance.now() < until) out.push(await fn())
  return { runs: out.length, out }
}

describe('a folder swapped for a link while the modules read the site (run 3+ times)', () => {
  it('the SEO report never shows the outside page', async () => {
    const { runs, out } = await whileSwapping(async () => JSON.stringify(await files.read('site', (r) => seoReport(r, true))))
    expect(runs).toBeGreaterThan(20)
    expect(out.filter((o) => o.includes(CANARY))).toEqual([])
    // Not vacuous: the blog's own page was reported on some runs.
    expect(out.some((o) => o.includes('"url":"/blog/"') && o.includes('"title":"Blog"'))).toBe(true)
  })

  it('the sitemap never lists the outside page', async () => {
    const { out } = await whileSwapping(async () => sitemapXml('https://shop.example', await files.read('site', listPages)))
    expect(out.filter((o) => o.includes(CANARY))).toEqual([])
    expect(out.some((o) => o.includes('https://shop.example/blog/'))).toBe(true)
  })

  it("the edge's /sitemap.xml never lists it either", async () => {
    const edge = new SiteModulesEdge([new SeoEdge({ files, log: memoryLogger() })])
    const site: SiteTarget = { siteId: 's1', slug: 'site', state: 'serving' as SiteTarget['state'] }
    const forward = async () => new Response('from the container')
    const { out } = await whileSwapping(async () => {
      edge.changed(site.siteId)
      const res = await edge.handle(new Request('http://site.example/sitemap.xml', { headers: { host: 'site.example' } }), site, { seo: true, chatbot: false, translation: false }, '198.51.100.1', forward)
      return res.text()
    })
    expect(out.filter((o) => o.includes(CANARY))).toEqual([])
    expect(out.some((o) => o.includes('/blog/'))).toBe(true)
  })

  it("the chatbot's index never holds the outside page's words", async () => {
    const index = SiteIndex.open(join(root, `index-${Math.random()}.db`), { maxBytes: 64 * 1024 * 1024 })
    try {
      const { out } = await whileSwapping(async () => {
        await files.read('site', (r) => index.sync(r))
        return JSON.stringify([index.search(`${CANARY} private words`, 5), index.search('sourdough story', 5)])
      })
      expect(out.filter((o) => o.includes(CANARY))).toEqual([])
      expect(out.some((o) => o.includes('/blog/'))).toBe(true)
    } finally {
      index.destroy()
    }
  })

  it("the chatbot service's syncs (as Berth runs them) never answer from it", async () => {
    const chatbot = new ChatbotService({
      dir: join(root, `chatbot-${Math.random()}`), files, diskBytes: () => 1024 ** 3, provider: null,
      budget: {} as AiBudget, log: memoryLogger(),
    })
    const site = { siteId: 'swap', slug: 'site' }
    const { out } = await whileSwapping(async () => {
      chatbot.changed(site.siteId)
      await chatbot.sync(site)
      return JSON.stringify(chatbot.search(site, `${CANARY} private words`, 5))
    })
    chatbot.remove(site.siteId)
    expect(out.filter((o) => o.includes(CANARY))).toEqual([])
  })
})
