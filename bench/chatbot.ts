/**
 * `bun run bench:chatbot`: the chatbot module's full-text index (src/modules/chatbot/site-index.ts,
 * issue 14), in-process, no binary or Docker needed.
 *
 * 1. Build: 1,000 generated HTML pages of about 3 KB (titles, headings, paragraphs of varied
 *    words, French and English) in a temporary public/ folder; the first `sync` timed, then a
 *    second one with nothing changed (the incremental walk alone).
 * 2. Search: 1,000 varied questions (phrases from the pages wrapped in "how do I ..." or
 *    "où ...", bare keywords, long rambling questions, FTS5 syntax as text), after 100 untimed;
 *    p50/p95/p99 of `search(question, 3)`. Goal: p50 under 20 ms.
 * 3. Reference in the same run, interleaved question by question so that load from neighbours on
 *    the shared machine hits both alike: the bare `SELECT rowid FROM passages WHERE passages
 *    MATCH ?` on the same FTS table over a second connection, with the OR query `search` ends
 *    with (built beforehand, untimed): FTS5 finding the passages and nothing else. The ratio is
 *    what query building, the AND-first pass, bm25 ranking, one passage per page and snippets add.
 *
 * `--baseline <dir>`: also build the same pages with the SiteIndex of another source tree (a
 * checkout of an earlier commit, e.g. `git archive <commit> | tar -x -C /tmp/base` with
 * node_modules linked), interleaved with ours round by round (ROUNDS, 3 by default): the ratio
 * of the first syncs and of the unchanged re-syncs, ours over the baseline's, is what a change to
 * how the pages are walked and read cost. The files are read as Berth reads them: through the
 * site's read-only reader (drivers/files/site-reader.ts), or a path for a tree from before it.
 */
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { HostSiteFiles } from '../src/drivers/files/site-reader'
import { toMatchQuery } from '../src/modules/chatbot/query'
import { SiteIndex } from '../src/modules/chatbot/site-index'
import { cleanupOnExit, tempDir } from './processes'
import { median } from './stats'

const GOALS = { p50Ms: 20 }
const PAGES = 1000
const QUESTIONS = 1000
const WARMUP = 100
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const baselineAt = process.argv.indexOf('--baseline')
const BASELINE = baselineAt === -1 ? null : resolve(process.argv[baselineAt + 1] ?? '')

cleanupOnExit()
const random = seeded(14)
const dir = tempDir('berth-bench-chatbot-')
const publicDir = join(dir, 'public')

// A vocabulary with a long tail, as real sites have: common topic words and rarer coined ones.
const COMMON = `booking table menu dinner lunch garden terrace harbour boat ferry island ticket price opening hours
  contact email phone address parking delivery order payment refund voucher gift wine cheese bread coffee tea
  breakfast vegetarian allergy gluten children family group event wedding private room view sea mountain walk
  bicycle rental guide tour museum history castle church market festival summer winter spring autumn weather
  école café crème brûlée été hôtel théâtre forêt château marché fête réservation déjeuner dîner petit-déjeuner
  chambre plage randonnée vélo musée église île bateau billet tarif horaires accès stationnement livraison`.split(/\s+/)
const RARE = Array.from({ length: 3000 }, () => coinWord())
const STARTS = ['How do I', 'Where can I find', 'What is the', 'Do you have', 'Is there a', 'Can I get', 'Comment réserver', 'Où est', 'Quels sont les', 'Est-ce que vous avez']

// 1. Build.
const texts: string[] = []
let htmlBytes = 0
for (let i = 0; i < PAGES; i++) {
  const rel = i === 0 ? 'index.html' : i % 10 === 0 ? `section-${i / 10}/index.html` : `section-${Math.floor(i / 10)}/page-${i}.html`
  const { html, text } = generatePage()
  mkdirSync(join(publicDir, rel, '..'), { recursive: true })
  writeFileSync(join(publicDir, rel), html)
  htmlBytes += html.length
  texts.push(text)
}
/** One implementation's SiteIndex, and how it is given the site's files. */
interface Indexer {
  name: string
  open(file: string): SiteIndex
  sync(index: SiteIndex): Promise<{ added: number; updated: number; removed: number }>
}
const thisTree: Indexer = {
  name: 'this tree',
  open: (file) => SiteIndex.open(file, { maxBytes: 1024 ** 3 }),
  sync: (index) => new HostSiteFiles(async () => dir).read('bench', (files) => index.sync(files)),
}
const indexers = [thisTree]
if (BASELINE !== null) {
  const theirs = (await import(join(BASELINE, 'src/modules/chatbot/site-index.ts'))).SiteIndex as typeof SiteIndex
  const reader = join(BASELINE, 'src/drivers/files/site-reader.ts')
  const files = existsSync(reader) ? new ((await import(reader)).HostSiteFiles as typeof HostSiteFiles)(async () => dir) : null
  indexers.unshift({
    name: `baseline ${BASELINE}`,
    open: (file) => theirs.open(file, { maxBytes: 1024 ** 3 }),
    // A tree from before the reader synced a path.
    sync: (index) => (files ? files.read('bench', (f) => index.sync(f)) : (index.sync as unknown as (dir: string) => ReturnType<SiteIndex['sync']>)(publicDir)),
  })
}
const timings = new Map(indexers.map((x) => [x.name, { build: [] as number[], resync: [] as number[] }]))
const file = join(dir, 'data', 'modules', 'chatbot', 'bench-site.db')
let index!: SiteIndex
for (let round = 1; round <= ROUNDS; round++) {
  for (const indexer of indexers) {
    index?.close()
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
    index = indexer.open(file)
    let started = performance.now()
    const built = await indexer.sync(index)
    const buildMs = performance.now() - started
    started = performance.now()
    const again = await indexer.sync(index)
    const resyncMs = performance.now() - started
    if (built.added !== PAGES || again.added + again.updated + again.removed !== 0) throw new Error(`unexpected syncs (${indexer.name}): ${JSON.stringify({ built, again })}`)
    timings.get(indexer.name)!.build.push(buildMs)
    timings.get(indexer.name)!.resync.push(resyncMs)
  }
}
// The last index built is ours: the searches below run on it.
const buildMs = median(timings.get(thisTree.name)!.build)
const resyncMs = median(timings.get(thisTree.name)!.resync)
const stats = index.stats()

// 2 and 3. Search, and the bare MATCH on a second connection.
const questions = Array.from({ length: QUESTIONS + WARMUP }, () => generateQuestion())
const reference = new Database(file, { readonly: true })
const bare = reference.query('SELECT rowid FROM passages WHERE passages MATCH ?')
const ours: number[] = []
const refs: number[] = []
const byKind = new Map<string, number[]>()
let answered = 0
for (const [n, { kind, question }] of questions.entries()) {
  const match = toMatchQuery(question)
  let t = performance.now()
  const hits = index.search(question, 3)
  const searchMs = performance.now() - t
  t = performance.now()
  if (match !== null) bare.all(match)
  const bareMs = performance.now() - t
  if (n < WARMUP) continue
  ours.push(searchMs)
  byKind.set(kind, [...(byKind.get(kind) ?? []), searchMs])
  if (match !== null) refs.push(bareMs)
  if (hits.length > 0) answered++
}
reference.close()
index.close()

const p50 = percentile(ours, 0.5)
const ms = (v: number) => v.toFixed(2).padStart(7)
console.log(`SiteIndex on ${PAGES} generated pages (${(htmlBytes / PAGES / 1024).toFixed(1)} KB of HTML each): ${stats.passages} passages, index ${(stats.bytes / 1024 ** 2).toFixed(1)} MB`)
console.log(`build (median of ${ROUNDS}): first sync ${buildMs.toFixed(0)} ms (${(buildMs / PAGES).toFixed(2)} ms a page), second sync with nothing changed ${resyncMs.toFixed(0)} ms`)
if (BASELINE !== null) {
  const base = timings.get(indexers[0]!.name)!
  const mine = timings.get(thisTree.name)!
  const ratios = (a: number[], b: number[]) => a.map((v, i) => v / b[i]!)
  console.log(`baseline ${BASELINE}, ${ROUNDS} interleaved rounds (ms each round; ratio this/baseline, median of per-round ratios):`)
  console.log(`  first sync    baseline ${base.build.map((v) => v.toFixed(0)).join(', ')}   this ${mine.build.map((v) => v.toFixed(0)).join(', ')}   ratio ${median(ratios(mine.build, base.build)).toFixed(2)}`)
  console.log(`  second sync   baseline ${base.resync.map((v) => v.toFixed(1)).join(', ')}   this ${mine.resync.map((v) => v.toFixed(1)).join(', ')}   ratio ${median(ratios(mine.resync, base.resync)).toFixed(2)}`)
}
console.log(`${QUESTIONS} questions (${WARMUP} more untimed first), ${answered} answered, ${refs.length} with words to match`)
console.log('\nFigure (ms)                                  p50      p95      p99    goal')
console.log(`search(question, 3)                      ${ms(p50)}  ${ms(percentile(ours, 0.95))}  ${ms(percentile(ours, 0.99))}    p50 < ${GOALS.p50Ms}: ${p50 < GOALS.p50Ms ? 'PASS' : 'FAIL'}`)
console.log(`bare SELECT rowid ... MATCH ? (OR)      ${ms(percentile(refs, 0.5))}  ${ms(percentile(refs, 0.95))}  ${ms(percentile(refs, 0.99))}`)
console.log(`ratio search/bare (medians)              ${(median(ours) / median(refs)).toFixed(2).padStart(7)}`)
console.log(`\nsearch p50 by question: ${[...byKind].map(([kind, v]) => `${kind} (${v.length}) ${median(v).toFixed(2)} ms`).join(', ')}`)
if (p50 >= GOALS.p50Ms) process.exitCode = 1

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
}

/** A reproducible generator (mulberry32), so every run measures the same pages and questions. */
function seeded(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function pick<T>(items: T[]): T {
  return items[Math.floor(random() * items.length)]!
}

function coinWord(): string {
  const syllables = 2 + Math.floor(random() * 3)
  return Array.from({ length: syllables }, () => pick([...'bcdfglmnprstvz']) + pick([...'aeiouy']) + (random() < 0.3 ? pick([...'nrsl']) : '')).join('')
}

/** A word: common ones often, rare ones along a long tail. */
function word(): string {
  if (random() < 0.35) return pick(COMMON)
  return RARE[Math.floor(RARE.length * random() ** 2)]!
}

function sentence(): string {
  const words = Array.from({ length: 6 + Math.floor(random() * 13) }, word)
  for (const stop of ['the', 'and', 'of', 'le', 'des', 'with']) if (random() < 0.4) words.splice(Math.floor(random() * words.length), 0, stop)
  const s = words.join(' ')
  return s[0]!.toUpperCase() + s.slice(1) + pick(['.', '.', '.', '!', '?'])
}

function generatePage(): { html: string; text: string } {
  const title = Array.from({ length: 2 + Math.floor(random() * 4) }, word).join(' ')
  const paragraphs: string[] = []
  let length = 0
  while (length < 2600) {
    const p = Array.from({ length: 2 + Math.floor(random() * 4) }, sentence).join(' ')
    paragraphs.push(p)
    length += p.length
  }
  const body = paragraphs.map((p, i) => (i > 0 && i % 3 === 0 ? `<h2>${word()} ${word()}</h2>\n<p>${p}</p>` : `<p>${p}</p>`)).join('\n')
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:sans-serif}</style><script>window.analytics=[]</script></head>
<body><nav><a href="/">Home</a> <a href="/contact/">Contact</a></nav><h1>${title}</h1>
${body}
<footer>© Example</footer></body></html>`
  return { html, text: paragraphs.join(' ') }
}

/** A visitor's question: a phrase from a page in a question, bare keywords, a long ramble, or FTS5 syntax. */
function generateQuestion(): { kind: string; question: string } {
  const kind = random()
  if (kind < 0.55) {
    const words = pick(texts).split(' ')
    const at = Math.floor(random() * (words.length - 4))
    return { kind: 'phrase', question: `${pick(STARTS)} ${words.slice(at, at + 2 + Math.floor(random() * 3)).join(' ').replace(/[.!?]/g, '')}?` }
  }
  if (kind < 0.8) return { kind: 'keywords', question: Array.from({ length: 1 + Math.floor(random() * 3) }, word).join(' ') }
  if (kind < 0.95) {
    const words = Array.from({ length: 25 + Math.floor(random() * 20) }, () => (random() < 0.4 ? pick(['the', 'a', 'I', 'you', 'is', 'to', 'de', 'la']) : word()))
    return { kind: 'long', question: `Hello, ${words.join(' ')}, thanks!` }
  }
  return { kind: 'syntax', question: pick(['"', 'NEAR(', '*', 'title:', '-', '((', 'AND OR NOT', '🙂', 'x'.repeat(200)]) + ' ' + word() }
}
