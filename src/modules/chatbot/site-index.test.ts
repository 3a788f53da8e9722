import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { HostSiteFiles } from '../../drivers/files/site-reader'
import { extractPage, pageUrl, PASSAGE_MAX, PASSAGE_MIN, splitPassages } from './page-text'
import { toMatchQuery } from './query'
import { SiteIndex } from './site-index'

const temp = mkdtempSync(join(tmpdir(), 'berth-site-index-'))
afterAll(() => rmSync(temp, { recursive: true, force: true }))

let sites = 0
/** Syncs a site's index as Berth does: through the read-only reader of its home. */
const syncSite = (s: { home: string; index: SiteIndex }) => new HostSiteFiles(async () => s.home).read('site', (files) => s.index.sync(files))
/** A site: its home with public/, and its index file under a data dir as Berth lays them out. */
function newSite(maxBytes = 64 * 1024 * 1024) {
  const id = `site-${++sites}`
  const home = join(temp, 'homes', id)
  const publicDir = join(home, 'public')
  mkdirSync(publicDir, { recursive: true })
  const file = join(temp, 'data', 'modules', 'chatbot', `${id}.db`)
  const index = SiteIndex.open(file, { maxBytes })
  const write = (rel: string, content: string | Buffer) => {
    mkdirSync(dirname(join(publicDir, rel)), { recursive: true })
    writeFileSync(join(publicDir, rel), content)
  }
  const urls = (question: string, limit?: number) => index.search(question, limit).map((h) => h.url)
  return { home, publicDir, file, index, write, urls }
}

const page = (title: string, ...paras: string[]) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${paras.map((p) => `<p>${p}</p>`).join('\n')}</body></html>`

/** Words no dictionary holds, so a phrase made of them matches one page only. */
function randomWords(n: number, seed: number): string {
  let x = seed
  const next = () => ((x = (x * 1103515245 + 12345) % 2 ** 31), x)
  return Array.from({ length: n }, () => Array.from({ length: 4 + (next() % 6) }, () => 'bcdfghjklmnpqrstvwxz'[next() % 20]! + 'aeiou'[next() % 5]!).join('').slice(0, 10)).join(' ')
}

describe('SiteIndex: sync and search', () => {
  it('indexes the pages and answers a phrase from one page with that page first, at the URL the file is served at', async () => {
    const s = newSite()
    s.write('index.html', page('Home', 'Welcome to the Blue Anchor, a seafood restaurant on the quay.'))
    s.write('about/index.html', page('About us', 'The Blue Anchor was founded in 1999 by two retired lighthouse keepers.'))
    s.write('blog/post.html', page('Winter menu', 'Our winter menu brings back the smoked haddock chowder everyone asked for.'))
    s.write('notes/opening.md', '# Opening hours\n\nWe open at noon, [see the map](https://example.com/map) for directions.')
    s.write('plain.txt', 'Gift vouchers can be bought at the counter.')
    s.write('my page.html', page('Spaces', 'A file name with a space in it about gooseberries.'))
    for (const rel of ['app.js', 'site.css', 'data.json', '.hidden/secret.html', '.draft.html']) s.write(rel, 'quarantined marmalade')

    expect(await syncSite(s)).toMatchObject({ added: 6, updated: 0, removed: 0, skipped: 0 })
    const [first] = s.index.search('Who founded the Blue Anchor?')
    expect(first).toMatchObject({ url: '/about/', title: 'About us' })
    expect(first!.passage).toContain('retired lighthouse keepers')
    expect(first!.snippet).toContain('founded')
    expect(first!.score).toBeGreaterThan(0)
    expect(s.urls('smoked haddock chowder')[0]).toBe('/blog/post.html')
    expect(s.urls('seafood restaurant quay')[0]).toBe('/')
    expect(s.urls('opening hours noon')[0]).toBe('/notes/opening.md')
    expect(s.urls('directions')).toEqual(['/notes/opening.md'])
    expect(s.urls('https example.com')).toEqual([]) // a link's address is not text
    expect(s.urls('gift vouchers')).toEqual(['/plain.txt'])
    expect(s.urls('gooseberries')).toEqual(['/my%20page.html'])
    expect(s.urls('marmalade')).toEqual([])
    expect(s.index.stats()).toMatchObject({ pages: 6, passages: 6 })
  })

  it('a changed file changes the answer: the old phrase is gone, the new one found', async () => {
    const s = newSite()
    s.write('menu.html', page('Menu', 'Today we serve grilled mackerel with rhubarb.'))
    s.write('other.html', page('Other', 'Nothing about fish here.'))
    await syncSite(s)
    expect(s.urls('grilled mackerel')).toEqual(['/menu.html'])

    s.write('menu.html', page('Menu', 'Today we serve roasted pumpkin soup, and it is much longer than before.'))
    expect(await syncSite(s)).toMatchObject({ added: 0, updated: 1, removed: 0, skipped: 0 })
    expect(s.urls('mackerel rhubarb')).toEqual([])
    expect(s.urls('roasted pumpkin')).toEqual(['/menu.html'])
    expect(s.index.stats().pages).toBe(2)
  })

  it("a deleted file's page is gone", async () => {
    const s = newSite()
    s.write('a.html', page('A', 'Sourdough baked every morning.'))
    s.write('b/index.html', page('B', 'Sourdough starter for sale.'))
    await syncSite(s)
    expect(s.urls('sourdough').sort()).toEqual(['/a.html', '/b/'])

    rmSync(join(s.publicDir, 'b'), { recursive: true })
    expect(await syncSite(s)).toMatchObject({ added: 0, updated: 0, removed: 1 })
    expect(s.urls('sourdough starter')).toEqual(['/a.html'])
    expect(s.index.stats()).toMatchObject({ pages: 1, passages: 1 })

    // public/ itself gone: an empty site.
    rmSync(s.publicDir, { recursive: true })
    expect(await syncSite(s)).toMatchObject({ removed: 1 })
    expect(s.index.stats()).toMatchObject({ pages: 0, passages: 0 })
  })

  it('the second sync reads no unchanged file: it compares size and mtime only', async () => {
    const s = newSite()
    const when = new Date('2024-05-01T10:00:00Z')
    for (let i = 0; i < 5; i++) {
      s.write(`p${i}.html`, page(`P${i}`, `Page ${i} speaks of walrus number ${i}.`))
      utimesSync(join(s.publicDir, `p${i}.html`), when, when)
    }
    const first = await syncSite(s)
    expect(first).toMatchObject({ added: 5 })
    expect(first.bytes).toBeGreaterThan(0)
    expect(await syncSite(s)).toEqual({ added: 0, updated: 0, removed: 0, skipped: 0, bytes: 0 })

    // Same size, same mtime, other words: not read, so the index keeps the old text.
    s.write('p0.html', page('P0', 'Page 0 speaks of narwal number 0.'))
    utimesSync(join(s.publicDir, 'p0.html'), when, when)
    expect(await syncSite(s)).toEqual({ added: 0, updated: 0, removed: 0, skipped: 0, bytes: 0 })
    expect(s.urls('walrus number 0')[0]).toBe('/p0.html')
    expect(s.urls('narwal')).toEqual([])

    // A new mtime: read again, and only that file.
    utimesSync(join(s.publicDir, 'p0.html'), new Date(), new Date())
    const third = await syncSite(s)
    expect(third).toMatchObject({ added: 0, updated: 1, removed: 0 })
    expect(third.bytes).toBe(statSync(join(s.publicDir, 'p0.html')).size)
    expect(s.urls('narwal')).toEqual(['/p0.html'])
  })

  it('never follows links: neither to /etc/passwd nor to a sibling folder, nor a public/ that is a link', async () => {
    const s = newSite()
    const sibling = join(s.home, 'private')
    mkdirSync(sibling)
    writeFileSync(join(sibling, 'secret.html'), page('Secret', 'The vault code is periwinkle.'))
    s.write('index.html', page('Home', 'Public words only, about turnips.'))
    symlinkSync('/etc/passwd', join(s.publicDir, 'passwd.html'))
    symlinkSync('/etc', join(s.publicDir, 'etc'))
    symlinkSync(sibling, join(s.publicDir, 'private'))
    symlinkSync('../private/secret.html', join(s.publicDir, 'secret.html'))
    symlinkSync('../private', join(s.publicDir, 'relative'))

    expect(await syncSite(s)).toMatchObject({ added: 1, skipped: 0 })
    expect(s.index.stats().pages).toBe(1)
    expect(s.urls('turnips')).toEqual(['/'])
    expect(s.urls('root bin bash nologin')).toEqual([])
    expect(s.urls('vault code periwinkle')).toEqual([])

    // The site's public/ replaced by a link to the sibling: an empty site, not the sibling's pages.
    const other = newSite()
    rmSync(other.publicDir, { recursive: true })
    symlinkSync(sibling, other.publicDir)
    expect(await syncSite(other)).toMatchObject({ added: 0 })
    expect(other.urls('periwinkle')).toEqual([])
  })

  it('stays within maxBytes: stops adding, reports skipped, and the file never passes the cap', async () => {
    const probe = newSite()
    await syncSite(probe)
    const empty = probe.index.stats().bytes
    const maxBytes = empty + 96 * 1024
    const s = newSite(maxBytes)
    for (let i = 0; i < 30; i++) s.write(`p${String(i).padStart(2, '0')}.html`, page(`Page ${i}`, randomWords(900, i + 1)))

    const result = await syncSite(s)
    expect(result.added).toBeGreaterThan(0)
    expect(result.skipped).toBeGreaterThan(0)
    expect(result.added + result.skipped).toBe(30)
    const stats = s.index.stats()
    expect(stats.bytes).toBeLessThanOrEqual(maxBytes)
    expect(statSync(s.file).size).toBeLessThanOrEqual(maxBytes)
    expect(existsSync(`${s.file}-wal`) ? statSync(`${s.file}-wal`).size : 0).toBe(0)
    expect(stats.pages).toBe(result.added)
    // The first pages in name order made it, the rest did not.
    expect(s.urls(randomWords(900, 1).split(' ').slice(0, 5).join(' '))[0]).toBe('/p00.html')
    expect(s.urls(randomWords(900, 30).split(' ').slice(0, 5).join(' '))).not.toContain('/p29.html')

    // Again: the same pages fit, the same are skipped, still under the cap.
    expect(await syncSite(s)).toMatchObject({ added: 0, updated: 0, removed: 0, skipped: result.skipped })
    expect(statSync(s.file).size).toBeLessThanOrEqual(maxBytes)

    // A cap below even the empty index: nothing is added.
    const tiny = newSite(1024)
    tiny.write('a.html', page('A', 'anything'))
    expect(await syncSite(tiny)).toMatchObject({ added: 0, skipped: 1 })

    // The pages rolled back left FTS5 consistent.
    s.index.close()
    const db = new Database(s.file)
    expect(() => db.run("INSERT INTO passages (passages, rank) VALUES ('integrity-check', 1)")).not.toThrow()
    expect((db.query('SELECT count(*) AS n FROM passages').get() as { n: number }).n).toBe(stats.passages)
    db.close()
  })

  it('files over 1 MiB are skipped, not indexed', async () => {
    const s = newSite()
    s.write('big.html', page('Big', 'hippopotamus '.repeat(90_000)))
    s.write('small.html', page('Small', 'hippopotamus'))
    expect(await syncSite(s)).toMatchObject({ added: 1, skipped: 1 })
    expect(s.urls('hippopotamus')).toEqual(['/small.html'])
  })

  it('takes titles from <title>, else the first <h1>, else the path; entities decoded', async () => {
    const s = newSite()
    s.write('a.html', '<html><head><title>  Fish &amp; Chips\n &#8212; &#x263A; </title></head><body><h1>Not this</h1><p>alpha</p></body></html>')
    s.write('b.html', '<html><head><title></title></head><body><h1>Big <em>Heading</em></h1><h1>Second</h1><p>alpha</p></body></html>')
    s.write('c/index.htm', '<p>alpha</p>')
    s.write('d.md', '# Markdown Title\n\nalpha')
    s.write('e.txt', 'alpha')
    s.write('f.html', '<title>Lonely lighthouse</title>')
    await syncSite(s)
    const titles = Object.fromEntries(s.index.search('alpha', 10).map((h) => [h.url, h.title]))
    expect(titles).toEqual({ '/a.html': 'Fish & Chips — ☺', '/b.html': 'Big Heading', '/c/': '/c/', '/d.md': 'Markdown Title', '/e.txt': '/e.txt' })
    expect(s.urls('lonely')).toEqual(['/f.html']) // a page with a title and no text
  })

  it('indexes only visible text: not scripts, styles, noscript, templates, comments or attributes', async () => {
    const s = newSite()
    s.write('index.html', `<!doctype html><html><head><title>T</title>
      <script>var zanzibar = "<p>zanzibar</p>"</script><style>.quokka { color: red }</style>
      <script type="module" src="x.js"></script></head><body>
      <noscript>Please enable axolotl</noscript><template><p>capybara</p></template><!-- wombat -->
      <img alt="x" data-note="pangolin > ocelot"><p class='a'>Visible: kestrel <b>pheas</b>ant caf&eacute; &lt;script&gt;</p>
      <SCRIPT>narwhal()</SCRIPT ><p>The end.</p></body></html>`)
    await syncSite(s)
    for (const hidden of ['zanzibar', 'quokka', 'axolotl', 'capybara', 'wombat', 'pangolin', 'ocelot', 'narwhal']) expect(s.urls(hidden), hidden).toEqual([])
    expect(s.urls('kestrel')).toEqual(['/'])
    expect(s.urls('pheasant')).toEqual(['/']) // inline tags join the word, as the browser shows it
    const [hit] = s.index.search('kestrel')
    expect(hit!.passage).toBe('Visible: kestrel pheasant café <script>\nThe end.')
  })

  it('matches French with or without accents, either way round', async () => {
    const s = newSite()
    s.write('fr.html', page("L'été", "L'école d'été à Montréal : café, crème brûlée et garçons pâtissiers.", 'Voir le résumé.'))
    s.write('en.html', page('Resume', 'Send us your resume and cover letter.'))
    await syncSite(s)
    expect(s.urls('ecole')).toEqual(['/fr.html'])
    expect(s.urls('ÉCOLE Montreal')).toEqual(['/fr.html'])
    expect(s.urls('creme brulee garcons patissier')).toEqual(['/fr.html'])
    expect(s.urls('Où est la crème brûlée ?')).toEqual(['/fr.html'])
    expect(s.urls('cover résumé')[0]).toBe('/en.html')
    expect(s.urls('resume').sort()).toEqual(['/en.html', '/fr.html'])
    expect(s.index.search('brulee')[0]!.snippet).toContain('crème brûlée')
  })

  it('never throws on hostile questions', async () => {
    const s = newSite()
    s.write('index.html', page('Harbour', 'The harbour master opens the lock at dawn.'))
    await syncSite(s)
    const before = s.index.stats()
    const hostile: [string, boolean][] = [
      ['"', false], ['""', false], ["'", false], ['NEAR(', false], ['NEAR(harbour lock, 2)', true], ['*', false],
      ['harbour*', true], ['**harbour**', true], [':', false], ['title:harbour', true], ['body : "lock', true],
      ['-', false], ['-harbour', true], ['((harbour', true], ['harbour)))', true], ['AND', false], ['OR NOT', false],
      ['harbour AND OR NOT', true], ['^harbour', true], ['{title body}: dawn', true], ['x'.repeat(10_000), false],
      ['harbour '.repeat(1300), true], ['\u0000\u0001', false], ['🚢⚓', false], ['\\', false], ['%_', false],
      ["'; DROP TABLE pages; --", false], ['\uD800 lone surrogate', false], ['harbour" OR "', true], ['+ - ~ | & ! @ # $', false],
    ]
    for (const [question, finds] of hostile) {
      let hits: ReturnType<typeof s.index.search> = []
      expect(() => (hits = s.index.search(question)), question.slice(0, 40)).not.toThrow()
      expect(hits.map((h) => h.url), question.slice(0, 40)).toEqual(finds ? ['/'] : [])
    }
    expect(s.index.search('harbour', 0)).toEqual([])
    expect(s.index.search('harbour', Number.NaN)).toEqual([])
    expect(s.index.stats()).toEqual(before)
  })

  it('gives at most one result per page, its best passage, with a short snippet around the match', async () => {
    const s = newSite()
    const long = Array.from({ length: 30 }, (_, i) => `Paragraph ${i} mentions the lighthouse once, among ${randomWords(12, i + 100)}.`)
    long[17] = 'The lighthouse lighthouse lighthouse keeper polishes the lamp.'
    s.write('long.html', page('Long', ...long))
    s.write('short.html', page('Short', 'A lighthouse, far away.'))
    await syncSite(s)
    const hits = s.index.search('lighthouse keeper', 5)
    expect(hits.map((h) => h.url)).toEqual(['/long.html', '/short.html'])
    expect(hits[0]!.passage).toContain('keeper polishes')
    expect(hits[0]!.snippet).toContain('keeper')
    expect(hits[0]!.snippet).toMatch(/^….*…$/)
    expect(hits[0]!.snippet.length).toBeLessThanOrEqual(162)
    expect(hits[1]!.snippet).toBe('A lighthouse, far away.')
    expect(s.index.stats().passages).toBeGreaterThan(2)
  })

  it("keeps sites apart: one site's index never answers with another's pages", async () => {
    const a = newSite()
    const b = newSite()
    a.write('index.html', page('A', 'Alpaca wool socks, knitted in Peru.'))
    b.write('index.html', page('B', 'Bamboo bicycles, built in Ghana.'))
    await Promise.all([syncSite(a), syncSite(b)])
    expect(a.urls('alpaca socks')).toEqual(['/'])
    expect(a.urls('bamboo bicycles ghana')).toEqual([])
    expect(b.urls('bamboo bicycles')).toEqual(['/'])
    expect(b.urls('alpaca wool peru')).toEqual([])
    expect(a.file).not.toBe(b.file)
    expect(statSync(dirname(a.file)).mode & 0o777).toBe(0o700)
    expect(statSync(a.file).mode & 0o777).toBe(0o600)
  })

  it('runs overlapping syncs one after the other; destroy deletes the files', async () => {
    const s = newSite()
    s.write('a.html', page('A', 'Quince jelly.'))
    const [one, two] = await Promise.all([syncSite(s), syncSite(s)])
    expect(one.added + two.added).toBe(1)
    expect(s.urls('quince')).toEqual(['/a.html'])
    s.index.destroy()
    for (const suffix of ['', '-wal', '-shm']) expect(existsSync(s.file + suffix)).toBe(false)

    // Reopened from nothing: empty, and it indexes again.
    const again = SiteIndex.open(s.file, { maxBytes: 1 << 24 })
    expect(again.stats()).toMatchObject({ pages: 0, passages: 0 })
    await syncSite({ home: s.home, index: again })
    expect(again.search('quince').map((h) => h.url)).toEqual(['/a.html'])
    again.close()
  })
})

describe('SiteIndex: the pieces', () => {
  it('derives the URL from the file path', () => {
    expect([
      pageUrl('index.html'), pageUrl('about/index.html'), pageUrl('blog/post.html'), pageUrl('old/index.htm'),
      pageUrl('a b/c?.html'), pageUrl('notes.md'), pageUrl('x/Index.html'),
    ]).toEqual(['/', '/about/', '/blog/post.html', '/old/', '/a%20b/c%3F.html', '/notes.md', '/x/Index.html'])
  })

  it('builds FTS5 queries from words only: quoted, stop words dropped, prefix from 4 characters', () => {
    expect(toMatchQuery('Where is the harbour master?')).toBe('"harbour"* OR "master"*')
    expect(toMatchQuery('Quels sont les horaires du café ?')).toBe('"horaires"* OR "café"*')
    expect(toMatchQuery('NEAR("a" b)* col:x -y ^z')).toBe('"near"* OR "col"')
    expect(toMatchQuery('the of and ? " *')).toBeNull()
    expect(toMatchQuery('Ecole école ÉCOLE')).toBe('"ecole"*')
    const many = toMatchQuery(randomWords(500, 7))!
    expect(many.split(' OR ').length).toBe(16)
  })

  it('splits text into passages of 500-800 characters at paragraph or sentence ends', () => {
    // Sentences of 20 to 250 characters, paragraphs of 1 to 7 sentences: every passage but the
    // last is within the bounds, and ends a sentence.
    const paras = Array.from({ length: 60 }, (_, i) =>
      Array.from({ length: 1 + (i % 7) }, (_, k) => `${randomWords(2 + ((i * 7 + k * 5) % 20), i * 10 + k)}.`).join(' '))
    const passages = splitPassages(paras)
    for (const p of passages.slice(0, -1)) {
      expect(p.length).toBeGreaterThanOrEqual(PASSAGE_MIN)
      expect(p.length).toBeLessThanOrEqual(PASSAGE_MAX)
      expect(p.endsWith('.')).toBe(true)
    }
    expect(passages.join(' ').replace(/\s+/g, ' ')).toBe(paras.join(' ').replace(/\s+/g, ' '))

    // One sentence far over the maximum: cut between words.
    const sentence = randomWords(500, 3)
    const pieces = splitPassages([sentence])
    expect(pieces.length).toBeGreaterThan(3)
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(PASSAGE_MAX)
    expect(pieces.join(' ')).toBe(sentence)
  })

  it('reads hostile pages in linear time', () => {
    const mib = 1024 * 1024
    const pages = ['<!--', '</script', '<script>', '<a href="', "<p x='", '&#', '<', '....', '. '.repeat(3), '\n \n']
    for (const unit of pages) {
      const text = unit.repeat(Math.floor(mib / unit.length))
      const started = performance.now()
      extractPage('x.html', Buffer.from(text))
      extractPage('x.md', Buffer.from(text.replaceAll('<', '[')))
      // Linear: 0.5 s of CPU for the worst unit here; quadratic on 1 MiB would take hours. The bound
      // leaves room for a loaded machine (6.8 s seen at load average 14).
      expect(performance.now() - started, unit).toBeLessThan(30_000)
    }
  })

  it('reads Windows-1252 pages when the bytes are not UTF-8', () => {
    const bytes = Buffer.from('<title>Caf\xe9</title><p>cr\xe8me br\xfbl\xe9e</p>', 'latin1')
    expect(extractPage('a.html', bytes)).toEqual({ url: '/a.html', title: 'Café', passages: ['crème brûlée'] })
  })
})
