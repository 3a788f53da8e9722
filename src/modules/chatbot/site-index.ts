/**
 * The full-text index behind the `chatbot` module (design.md, AI modules): one SQLite file per
 * site, holding the text of the pages under the site's `public/` in an FTS5 table, one row per
 * passage of about 500-800 characters. Visitors' questions are answered from the best passages,
 * with the page linked.
 *
 * The index is derived data: `sync` rebuilds whatever differs from the files, so the file runs
 * with synchronous=NORMAL (a commit lost to a power cut is redone by the next sync) and a schema
 * change simply starts the file over.
 *
 * The site's files belong to the customer, who can change them while Berth reads them. Nothing
 * outside `publicDir` is ever read: links are never followed (lstat while walking, O_NOFOLLOW when
 * opening), and each opened file's real path (/proc/self/fd) must lie under publicDir's, so a
 * directory swapped for a link between the walk and the read is caught on the open file itself
 * (the symlink-escape advisories of pterodactyl/wings, style.md). Every scan of a page is linear
 * in its length: a hostile page can make its own indexing slow, never quadratic.
 */
import { Database } from 'bun:sqlite'
import { closeSync, constants, mkdirSync, openSync, rmSync } from 'node:fs'
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises'
import { dirname, extname, join, sep } from 'node:path'

/** What one `sync` did. `bytes` counts the bytes of the files it read: 0 when nothing changed. */
export interface SyncResult {
  added: number
  updated: number
  removed: number
  /** Files not indexed: over MAX_FILE_BYTES, beyond MAX_FILES, unreadable, or past the index's cap. */
  skipped: number
  bytes: number
}

/** One answer to a question: the page's best passage. `score` is relevance, higher is better. */
export interface SearchHit {
  url: string
  title: string
  passage: string
  snippet: string
  score: number
}

export interface IndexStats {
  pages: number
  passages: number
  /** The index file's size (page_count * page_size). */
  bytes: number
}

export const MAX_FILE_BYTES = 1024 * 1024
export const MAX_FILES = 20_000
export const PASSAGE_MIN = 500
export const PASSAGE_MAX = 800
/** Directory entries looked at per sync, indexable or not: bounds the walk of a huge tree. */
const MAX_ENTRIES = 200_000
const MAX_DEPTH = 64
/** A page's passages have rowids id*4096 .. id*4096+4095, so a page is deleted by rowid range. */
const ROWID_SHIFT = 12
const MAX_PASSAGES = 2 ** ROWID_SHIFT
/** Changed files read before their batch is written: bounds memory whatever the site holds. */
const BATCH_BYTES = 4 * 1024 * 1024
const SCHEMA_VERSION = 1
const INDEXED = new Set(['.html', '.htm', '.md', '.txt'])
/** bm25 weights of the FTS columns (title, body, url): a word in the title counts 4 times. */
const WEIGHTS = '4.0, 1.0, 0.0'
/**
 * Passages ranked per query at most, the first in rowid order (shallow pages first): bounds the
 * cost of a question of common words on a big site. The bench's 1,000 pages are 5,126 passages.
 */
const MAX_RANKED = 10_000

interface PageRow {
  id: number
  file: string
  size: number
  mtime_ms: number
}

interface FileEntry {
  rel: string
  size: number
  mtimeMs: number
}

interface ReadPage extends FileEntry {
  url: string
  title: string
  passages: string[]
}

/**
 * One site's index. Not shared between sites: each site has its own file, so one site's
 * questions can never reach another's pages.
 *
 * @example
 * const index = SiteIndex.open(`${dataDir}/modules/chatbot/${siteId}.db`, { maxBytes: 50 * 1024 ** 2 })
 * await index.sync(`${home}/public`)
 * index.search('how do I book a table?') // [{ url: '/contact/', title: 'Contact', passage, snippet, score }]
 */
export class SiteIndex {
  private readonly q: ReturnType<typeof prepare>
  private readonly pageSize: number
  /** Syncs run one after the other: a second call waits for the first. */
  private queue: Promise<unknown> = Promise.resolve()
  private closed = false

  private constructor(private readonly db: Database, readonly file: string, private readonly maxBytes: number) {
    this.pageSize = (db.query('PRAGMA page_size').get() as { page_size: number }).page_size
    this.q = prepare(db)
  }

  /** Opens the index file, creating it (and its folders, mode 0700; the file 0600) if needed. */
  static open(file: string, opts: { maxBytes: number }): SiteIndex {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    // Created here so that SQLite's -wal and -shm files, which copy its mode, are private too.
    closeSync(openSync(file, 'a', 0o600))
    const db = new Database(file, { create: true, strict: true })
    try {
      createSchema(db)
      return new SiteIndex(db, file, opts.maxBytes)
    } catch (err) {
      db.close()
      throw err
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.db.close()
  }

  /** Closes the index and deletes its files. */
  destroy(): void {
    this.close()
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(this.file + suffix, { force: true })
  }

  /**
   * Brings the index in line with the files under `publicDir`: reads only the files whose size or
   * mtime changed, drops the pages whose files are gone. A missing publicDir, or one that is a
   * link, counts as an empty site. Stops adding at the first page that would take the index over
   * `maxBytes`; that page and the changed ones after it count as skipped, and the stale versions
   * of changed pages are removed rather than kept.
   */
  sync(publicDir: string): Promise<SyncResult> {
    const run = this.queue.then(() => this.syncNow(publicDir))
    this.queue = run.catch(() => {})
    return run
  }

  /**
   * The best passage of each of the `limit` best pages for a free-text question (at most 50);
   * [] when nothing matches. Pages holding every word of the question come first, then pages
   * holding some, each group by bm25 (`score` is bm25 negated: higher is better).
   */
  search(question: string, limit = 3): SearchHit[] {
    const terms = questionTerms(question)
    const n = Math.max(0, Math.min(50, Math.floor(limit)))
    if (terms.length === 0 || !(n > 0)) return []
    // Every word first: cheap (the doclists intersect) and usually enough. The OR query ranks
    // every passage holding any word, which is where the time goes (bench/chatbot.ts).
    const queries = terms.length > 1 ? [' AND ', ' OR '].map((op) => terms.map((t) => t.match).join(op)) : [terms[0]!.match]
    const best = new Map<number, { id: number; score: number }>()
    for (const match of queries) {
      for (const row of this.q.best.all(match, n)) {
        const page = Math.floor(row.id / MAX_PASSAGES)
        if (best.size < n && !best.has(page)) best.set(page, row)
      }
      if (best.size === n) break
    }
    return [...best.values()].map(({ id, score }) => {
      const { url, title, body } = this.q.passage.get(id)!
      return { url, title, passage: body, snippet: snippetOf(body, terms), score: -score }
    })
  }

  stats(): IndexStats {
    const { pages, passages } = this.q.stats.get()!
    return { pages, passages, bytes: this.sizeBytes() }
  }

  private sizeBytes(): number {
    return this.q.pageCount.get()!.page_count * this.pageSize
  }

  private async syncNow(publicDir: string): Promise<SyncResult> {
    const result: SyncResult = { added: 0, updated: 0, removed: 0, skipped: 0, bytes: 0 }
    const root = await resolveRoot(publicDir)
    const { files, skipped } = root === null ? { files: [], skipped: 0 } : await listFiles(root)
    result.skipped += skipped
    this.assertOpen()
    const gone = new Map(this.q.pages.all().map((row) => [row.file, row]))
    const changed = files.filter((f) => {
      const old = gone.get(f.rel)
      gone.delete(f.rel)
      return old === undefined || old.size !== f.size || old.mtime_ms !== f.mtimeMs
    })
    this.write(() => {
      for (const row of gone.values()) this.removePage(row.id)
    })
    result.removed += gone.size

    let batch: ReadPage[] = []
    let batchBytes = 0
    let full = false
    for (const [i, entry] of changed.entries()) {
      const page = root === null ? null : await readPage(root, entry)
      this.assertOpen()
      if (page === null) {
        this.forget([entry], result)
        continue
      }
      result.bytes += page.size
      batch.push(page)
      batchBytes += page.size
      if (batchBytes < BATCH_BYTES && i < changed.length - 1) continue
      full = this.write(() => this.addPages(batch, result))
      batch = []
      batchBytes = 0
      if (full) {
        this.forget(changed.slice(i + 1), result)
        break
      }
    }
    if (!full && batch.length > 0) this.write(() => this.addPages(batch, result))
    // Freed pages go back to the filesystem and the WAL is emptied: the disk holds the cap at most.
    this.db.query('PRAGMA incremental_vacuum').all()
    this.db.query('PRAGMA wal_checkpoint(TRUNCATE)').all()
    return result
  }

  /** Adds the pages one by one in savepoints; returns true when one did not fit under the cap. */
  private addPages(pages: ReadPage[], result: SyncResult): boolean {
    for (const [i, page] of pages.entries()) {
      const old = this.q.page.get(page.rel)
      this.db.run('SAVEPOINT page')
      if (old) this.removePassages(old.id)
      const { id } = this.q.upsert.get(page.rel, page.size, page.mtimeMs, page.passages.length)!
      for (const [n, body] of page.passages.entries()) this.q.insertPassage.run(id * MAX_PASSAGES + n, page.title, body, page.url)
      this.q.flush.run()
      if (this.sizeBytes() > this.maxBytes) {
        this.db.run('ROLLBACK TO page')
        this.db.run('RELEASE page')
        this.forget(pages.slice(i), result)
        return true
      }
      this.db.run('RELEASE page')
      if (old) result.updated++
      else result.added++
    }
    return false
  }

  /** Files that changed but are not indexed: skipped, and their old versions removed. */
  private forget(entries: FileEntry[], result: SyncResult): void {
    this.write(() => {
      for (const entry of entries) {
        const old = this.q.page.get(entry.rel)
        if (old) this.removePage(old.id)
        result.skipped++
      }
    })
  }

  private removePage(id: number): void {
    this.removePassages(id)
    this.q.deletePage.run(id)
  }

  private removePassages(id: number): void {
    this.q.deletePassages.run(id * MAX_PASSAGES, (id + 1) * MAX_PASSAGES - 1)
  }

  private write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate()
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`the site index ${this.file} was closed during a sync`)
  }
}

/** The statements of one index, prepared once. */
function prepare(db: Database) {
  return {
    pages: db.query<PageRow, []>('SELECT id, file, size, mtime_ms FROM pages'),
    page: db.query<PageRow, [string]>('SELECT id, file, size, mtime_ms FROM pages WHERE file = ?'),
    upsert: db.query<{ id: number }, [string, number, number, number]>(
      `INSERT INTO pages (file, size, mtime_ms, passages) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (file) DO UPDATE SET size = ?2, mtime_ms = ?3, passages = ?4 RETURNING id`),
    deletePage: db.query<unknown, [number]>('DELETE FROM pages WHERE id = ?'),
    deletePassages: db.query<unknown, [number, number]>('DELETE FROM passages WHERE rowid BETWEEN ? AND ?'),
    insertPassage: db.query<unknown, [number, string, string, string]>('INSERT INTO passages (rowid, title, body, url) VALUES (?, ?, ?, ?)'),
    // FTS5 keeps new rows in memory until the transaction ends; 'flush' writes them out, so
    // page_count then measures what the page really takes.
    flush: db.query("INSERT INTO passages (passages) VALUES ('flush')"),
    pageCount: db.query<{ page_count: number }, []>('PRAGMA page_count'),
    // The best passage of each page: min() makes the bare `id` that of the best row (SQLite
    // documents this for a single min/max aggregate). MATERIALIZED keeps bm25 out of the
    // aggregate, where FTS5 cannot run it.
    best: db.query<{ id: number; score: number }, [string, number]>(
      `WITH hits AS MATERIALIZED (
         SELECT rowid AS id, bm25(passages, ${WEIGHTS}) AS score FROM passages WHERE passages MATCH ?1 LIMIT ${MAX_RANKED}
       )
       SELECT id, min(score) AS score FROM hits GROUP BY id >> ${ROWID_SHIFT} ORDER BY score, id LIMIT ?2`),
    passage: db.query<{ url: string; title: string; body: string }, [number]>('SELECT url, title, body FROM passages WHERE rowid = ?'),
    stats: db.query<{ pages: number; passages: number }, []>('SELECT count(*) AS pages, coalesce(sum(passages), 0) AS passages FROM pages'),
  }
}

function createSchema(db: Database): void {
  // Must come before the first table exists: lets incremental_vacuum return freed pages.
  db.exec('PRAGMA auto_vacuum = INCREMENTAL')
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec('PRAGMA busy_timeout = 5000')
  const { user_version: version } = db.query('PRAGMA user_version').get() as { user_version: number }
  if (version === SCHEMA_VERSION) return
  db.transaction(() => {
    db.exec('DROP TABLE IF EXISTS passages')
    db.exec('DROP TABLE IF EXISTS pages')
    db.exec(`CREATE TABLE pages (
      id INTEGER PRIMARY KEY, file TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime_ms REAL NOT NULL, passages INTEGER NOT NULL)`)
    // remove_diacritics 2: "ecole" finds "école", and so on for every Latin accent.
    db.exec(`CREATE VIRTUAL TABLE passages USING fts5(title, body, url UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')`)
    // Deleted rows leave the index at once instead of at the next merge: no stale words on disk.
    db.exec("INSERT INTO passages (passages, rank) VALUES ('secure-delete', 1)")
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
  }).immediate()
}

// ---- The files -------------------------------------------------------------------------------

/** publicDir's real path, or null when it is missing, a link or not a directory. */
async function resolveRoot(publicDir: string): Promise<string | null> {
  try {
    if (!(await lstat(publicDir)).isDirectory()) return null
    return await realpath(publicDir)
  } catch (err) {
    if (hasCode(err, 'ENOENT', 'ENOTDIR')) return null
    throw err
  }
}

/**
 * The indexable files under `root`, breadth first in name order (the same files win the cap on
 * every sync, shallow pages first). Links, dot-entries and anything but files and directories are
 * passed over without being followed.
 */
async function listFiles(root: string): Promise<{ files: FileEntry[]; skipped: number }> {
  const files: FileEntry[] = []
  let skipped = 0
  let seen = 0
  const dirs: [string, number][] = [['', 0]]
  for (let d = 0; d < dirs.length && seen < MAX_ENTRIES; d++) {
    const [dir, depth] = dirs[d]!
    let names: string[]
    try {
      // A folder swapped for a link since its lstat is not listed (reads are checked anyway).
      if (dir && !isInside(root, await realpath(join(root, dir)))) continue
      names = (await readdir(join(root, dir))).filter((n) => !n.startsWith('.')).sort()
    } catch (err) {
      if (hasCode(err, 'ENOENT', 'ENOTDIR', 'EACCES', 'ELOOP')) continue
      throw err
    }
    names = names.slice(0, MAX_ENTRIES - seen)
    seen += names.length
    for (let k = 0; k < names.length; k += 64) {
      const chunk = names.slice(k, k + 64).map((name) => (dir ? `${dir}/${name}` : name))
      const stats = await Promise.all(chunk.map((rel) => lstat(join(root, rel)).catch((err) => {
        if (hasCode(err, 'ENOENT', 'ENOTDIR', 'EACCES')) return null
        throw err
      })))
      for (const [j, st] of stats.entries()) {
        const rel = chunk[j]!
        if (st === null) continue
        if (st.isDirectory()) {
          if (depth < MAX_DEPTH) dirs.push([rel, depth + 1])
        } else if (st.isFile() && INDEXED.has(extname(rel).toLowerCase())) {
          if (st.size > MAX_FILE_BYTES || files.length >= MAX_FILES) skipped++
          else files.push({ rel, size: st.size, mtimeMs: st.mtimeMs })
        }
      }
    }
  }
  return { files, skipped }
}

/** The page in `entry`, or null when it cannot be read safely (gone, a link, outside root, too big). */
async function readPage(root: string, entry: FileEntry): Promise<ReadPage | null> {
  const path = join(root, entry.rel)
  let handle
  try {
    // O_NONBLOCK: a FIFO swapped in for the file fails the checks below instead of blocking.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    if (hasCode(err, 'ENOENT', 'ENOTDIR', 'ELOOP', 'EMLINK', 'EACCES', 'EPERM', 'ENXIO', 'EISDIR')) return null
    throw err
  }
  try {
    const st = await handle.stat()
    if (!st.isFile() || st.size > MAX_FILE_BYTES || !(await isUnder(root, handle.fd, path))) return null
    const buffer = Buffer.alloc(st.size)
    let length = 0
    while (length < st.size) {
      const { bytesRead } = await handle.read(buffer, length, st.size - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    return { rel: entry.rel, size: st.size, mtimeMs: st.mtimeMs, ...extractPage(entry.rel, buffer.subarray(0, length)) }
  } finally {
    await handle.close()
  }
}

/** Whether the open file `fd` really lies under `root`, whatever links its path went through. */
async function isUnder(root: string, fd: number, path: string): Promise<boolean> {
  let real: string
  try {
    real = await readlink(`/proc/self/fd/${fd}`)
  } catch (err) {
    if (!hasCode(err, 'ENOENT')) throw err
    real = await realpath(path) // no /proc (not Linux): checked on the path, racy but still a check
  }
  return isInside(root, real)
}

function isInside(root: string, real: string): boolean {
  return real.startsWith(root.endsWith(sep) ? root : root + sep)
}

function hasCode(err: unknown, ...codes: string[]): boolean {
  return typeof err === 'object' && err !== null && codes.includes((err as { code?: string }).code ?? '')
}

// ---- The text of a page ----------------------------------------------------------------------

/**
 * The URL path a file is served at: `index.html` → `/`, `about/index.html` → `/about/`,
 * `blog/post.html` → `/blog/post.html` (`rel` is relative to public/, with `/` separators).
 */
export function pageUrl(rel: string): string {
  const parts = rel.split('/')
  if (/^index\.html?$/.test(parts.at(-1)!)) parts[parts.length - 1] = ''
  return '/' + parts.map(encodeURIComponent).join('/')
}

/** A file's URL, title and passages. UTF-8, or Windows-1252 when the bytes are not valid UTF-8. */
export function extractPage(rel: string, bytes: Uint8Array): { url: string; title: string; passages: string[] } {
  let source: string
  try {
    source = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    source = new TextDecoder('windows-1252').decode(bytes)
  }
  source = source.normalize('NFC')
  const url = pageUrl(rel)
  const ext = extname(rel).toLowerCase()
  const { title, text } = ext === '.md' ? markdownToText(source) : ext === '.txt' ? { title: '', text: source } : htmlToText(source)
  const passages = splitPassages(paragraphs(text)).slice(0, MAX_PASSAGES)
  // A page with a title and no text can still be found by its title.
  return { url, title: title || url, passages: passages.length > 0 ? passages : [''] }
}

/** Elements whose content is never shown as text. */
const HIDDEN = ['script', 'style', 'noscript', 'template', 'title']
const HIDDEN_END = new Map(HIDDEN.map((name) => [name, new RegExp(`</${name}(?=[\\s/>])`, 'gi')]))
/** Tags that start a new paragraph; other tags join words (inline) or separate them (the rest). */
const BLOCK = new Set('address article aside blockquote body dd details dialog div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hr html li main nav ol p pre section summary table tbody thead tfoot tr ul'.split(' '))
const INLINE = new Set('a abbr b bdi bdo cite code data del dfn em font i ins kbd mark q s samp small span strong sub sup time u var wbr'.split(' '))
const TAG_START = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/y

/**
 * The visible text of an HTML page, paragraphs separated by blank lines, and its title (the
 * first `<title>`, else the first `<h1>`). One pass, linear in the page's length.
 */
export function htmlToText(html: string): { title: string; text: string } {
  let out = ''
  let title = ''
  let h1 = ''
  let h1Start = -1
  let i = 0
  while (i < html.length) {
    const lt = html.indexOf('<', i)
    if (lt < 0) {
      out += html.slice(i)
      break
    }
    out += html.slice(i, lt)
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4)
      i = end < 0 ? html.length : end + 3
      continue
    }
    if (html[lt + 1] === '!' || html[lt + 1] === '?') {
      const end = html.indexOf('>', lt + 2) // <!doctype ...>, <?xml ...?>
      i = end < 0 ? html.length : end + 1
      continue
    }
    TAG_START.lastIndex = lt
    const tag = TAG_START.exec(html)
    if (!tag) {
      out += '<'
      i = lt + 1
      continue
    }
    const closing = tag[1] === '/'
    const name = tag[2]!.toLowerCase()
    i = tagEnd(html, lt + tag[0].length)
    const hiddenEnd = closing ? undefined : HIDDEN_END.get(name)
    if (hiddenEnd) {
      hiddenEnd.lastIndex = i
      const end = hiddenEnd.exec(html)
      if (name === 'title' && !title) title = collapse(decodeEntities(html.slice(i, end ? end.index : html.length)))
      i = end ? tagEnd(html, end.index + end[0].length) : html.length
      out += ' '
      continue
    }
    if (name === 'h1' && !closing && h1Start < 0 && !h1) h1Start = out.length
    if (name === 'h1' && closing && h1Start >= 0) {
      h1 = collapse(decodeEntities(out.slice(h1Start)))
      h1Start = -1
    }
    out += BLOCK.has(name) ? '\n\n' : name === 'br' ? '\n' : INLINE.has(name) ? '' : ' '
  }
  return { title: title || h1, text: decodeEntities(out) }
}

/** The index just past the `>` closing a tag whose attributes start at `from` (quotes respected). */
function tagEnd(s: string, from: number): number {
  let quote = ''
  let previous = ''
  for (let j = from; j < s.length; j++) {
    const c = s[j]!
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === '>') {
      return j + 1
    } else if ((c === '"' || c === "'") && previous === '=') {
      quote = c
    }
    if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') previous = c
  }
  return s.length
}

/** Markdown as text: headings' marks, link targets and images' addresses dropped. */
function markdownToText(md: string): { title: string; text: string } {
  const title = /^#[ \t]+(.{1,300})$/m.exec(md)?.[1]?.replace(/#+\s*$/, '').trim() ?? ''
  // Bounded repetitions only: a page full of `[` must not make these quadratic.
  const text = md
    .replace(/^[ \t]{0,3}#{1,6}[ \t]+/gm, '')
    .replace(/!?\[([^\]\n]{0,300})\]\([^)\s]{0,2000}(?:[ \t]+"[^"\n]{0,300}")?\)/g, '$1')
    .replace(/<[^<>\n]{1,300}>/g, ' ')
  return { title: collapse(title), text }
}

const ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', shy: '', copy: '©', reg: '®', trade: '™',
  hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', sbquo: '‚', ldquo: '“', rdquo: '”', bdquo: '„',
  laquo: '«', raquo: '»', middot: '·', bull: '•', euro: '€', pound: '£', yen: '¥', cent: '¢', deg: '°', times: '×',
  agrave: 'à', aacute: 'á', acirc: 'â', atilde: 'ã', auml: 'ä', aring: 'å', aelig: 'æ', ccedil: 'ç', egrave: 'è',
  eacute: 'é', ecirc: 'ê', euml: 'ë', igrave: 'ì', iacute: 'í', icirc: 'î', iuml: 'ï', ntilde: 'ñ', ograve: 'ò',
  oacute: 'ó', ocirc: 'ô', otilde: 'õ', ouml: 'ö', oslash: 'ø', oelig: 'œ', ugrave: 'ù', uacute: 'ú', ucirc: 'û',
  uuml: 'ü', yacute: 'ý', yuml: 'ÿ', szlig: 'ß', Agrave: 'À', Aacute: 'Á', Acirc: 'Â', Auml: 'Ä', Ccedil: 'Ç',
  Egrave: 'È', Eacute: 'É', Ecirc: 'Ê', Euml: 'Ë', Icirc: 'Î', Iuml: 'Ï', Ocirc: 'Ô', Ouml: 'Ö', OElig: 'Œ',
  Ugrave: 'Ù', Ucirc: 'Û', Uuml: 'Ü',
}

/** Named (the common ones), decimal and hexadecimal character references; unknown ones stay as written. */
export function decodeEntities(s: string): string {
  return s.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z]{2,8}));/g, (whole, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return ENTITIES[name] ?? whole
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16)
    const valid = code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)
    return valid ? String.fromCodePoint(code) : '\uFFFD'
  })
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}

/** Lines with text, grouped into paragraphs at blank lines, whitespace collapsed. */
function paragraphs(text: string): string[] {
  const out: string[] = []
  let current: string[] = []
  for (const line of text.split('\n')) {
    const words = collapse(line)
    if (words) current.push(words)
    else if (current.length > 0) {
      out.push(current.join(' '))
      current = []
    }
  }
  if (current.length > 0) out.push(current.join(' '))
  return out
}

/**
 * Passages of PASSAGE_MIN to PASSAGE_MAX characters: paragraphs are joined until one reaches the
 * minimum, and a passage that would pass the maximum is cut at a sentence end (a sentence longer
 * than the maximum, at a space). Only a page's last passage, or one followed by a long sentence,
 * may be shorter.
 */
export function splitPassages(paras: string[]): string[] {
  const out: string[] = []
  let buffer = ''
  for (const para of paras) {
    const units = sentences(para)
    for (const [k, unit] of units.entries()) {
      if (buffer && buffer.length + 1 + unit.length > PASSAGE_MAX) {
        out.push(buffer)
        buffer = ''
      }
      buffer = buffer ? buffer + (k === 0 ? '\n' : ' ') + unit : unit
      if (k === units.length - 1 && buffer.length >= PASSAGE_MIN) {
        out.push(buffer)
        buffer = ''
      }
    }
  }
  if (buffer) out.push(buffer)
  return out
}

const SENTENCE_END = new Set(['.', '!', '?', '…', '。', '！', '？'])
const CLOSERS = new Set(['"', "'", '»', '”', '’', ')', ']'])

/** A paragraph's sentences (split after . ! ? … and closing quotes, at a space), none over PASSAGE_MAX. */
function sentences(para: string): string[] {
  const out: string[] = []
  let start = 0
  for (let i = 1; i < para.length; i++) {
    if (para[i] !== ' ') continue
    let j = i - 1
    while (j > start && CLOSERS.has(para[j]!)) j--
    if (SENTENCE_END.has(para[j]!)) {
      out.push(para.slice(start, i))
      start = i + 1
    }
  }
  if (start < para.length) out.push(para.slice(start))
  return out.flatMap(cutLong)
}

function cutLong(sentence: string): string[] {
  const out: string[] = []
  let rest = sentence
  while (rest.length > PASSAGE_MAX) {
    const space = rest.lastIndexOf(' ', PASSAGE_MAX)
    const cut = space > PASSAGE_MAX / 2 ? space : PASSAGE_MAX
    out.push(rest.slice(0, cut))
    rest = rest.slice(cut).trimStart()
  }
  if (rest) out.push(rest)
  return out
}

// ---- Questions -------------------------------------------------------------------------------

/** Words that say nothing about what is asked, English and French, accents removed. */
const STOP_WORDS = new Set(`
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did didn do does doesn doing don down during each few for from further get got had has
have having he hello her here hers herself hey hi him himself his how if in into is isn it its itself just me
more most my myself no nor not now of off on once only or other our ours ourselves out over own please same she
should so some such tell than thank thanks that the their theirs them themselves then there these they this those
through to too under until up very was wasn we were what when where which while who whom why will with would you
your yours yourself yourselves
ai au aux avec avez avoir avons bonjour ca ce ceci cela ces cet cette comment dans de des du elle elles en est
et etait ete etre eux fait faire ici il ils je la le les leur leurs lui ma mais me meme merci mes moi mon ne nos
notre nous on ont ou par pas peut peux pour pourquoi pouvez qu quand que quel quelle quelles quels qui sa se ses
son sont sur svp ta te tes toi ton tu un une vos votre vous y
`.trim().split(/\s+/))
const MAX_QUESTION_CHARS = 4000
const MAX_TERMS = 16
const MAX_TERM_CHARS = 64
const SNIPPET_CHARS = 160

/** One word of a question: as FTS5 will match it, and folded (lower case, no accents) for snippets. */
interface Term {
  match: string
  folded: string
}

/**
 * A question's words: letters, digits and marks only, so no FTS5 syntax survives; stop words,
 * one-letter words and repeats dropped; each quoted, prefix-matched from 4 characters.
 */
function questionTerms(question: string): Term[] {
  const words = question.slice(0, MAX_QUESTION_CHARS).normalize('NFC').toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []
  const terms = new Map<string, Term>()
  for (const word of words) {
    const folded = fold(word)
    if (folded.length < 2 || word.length > MAX_TERM_CHARS || STOP_WORDS.has(folded) || terms.has(folded)) continue
    terms.set(folded, { match: folded.length >= 4 ? `"${word}"*` : `"${word}"`, folded })
    if (terms.size === MAX_TERMS) break
  }
  return [...terms.values()]
}

/**
 * The FTS5 query `search` runs last for a question, or null when no word is left: its terms
 * OR-ed, `"booking"* OR "table"* OR "paris"*`. Safe for any input.
 */
export function toMatchQuery(question: string): string | null {
  const terms = questionTerms(question)
  return terms.length === 0 ? null : terms.map((t) => t.match).join(' OR ')
}

function fold(s: string): string {
  return s.normalize('NFD').replace(/\p{M}+/gu, '').toLowerCase()
}

/**
 * About SNIPPET_CHARS of `passage` where most of the question's words are (a word matches when it
 * starts with a term, accents and case ignored as in the index), cut between words, `…` where
 * text was left out.
 */
export function snippetOf(passage: string, terms: Term[]): string {
  // The folded passage, and for each of its characters the index of the original one.
  let folded = ''
  const origin: number[] = []
  for (let i = 0; i < passage.length; i++) {
    const c = passage[i]!
    const f = c < '\u0080' ? c.toLowerCase() : fold(c)
    folded += f
    for (let k = 0; k < f.length; k++) origin.push(i)
  }
  const hits: [at: number, term: number][] = []
  for (const [t, { folded: term }] of terms.entries()) {
    for (let i = folded.indexOf(term); i >= 0; i = folded.indexOf(term, i + 1)) {
      if (i === 0 || !/[\p{L}\p{N}]/u.test(folded[i - 1]!)) hits.push([origin[i]!, t])
    }
  }
  hits.sort((a, b) => a[0] - b[0])
  // The window starting at a hit that holds the most different terms; the first such.
  let center = 0
  let most = 0
  for (const [i, [at]] of hits.entries()) {
    const within = new Set(hits.slice(i).filter(([other]) => other - at < (SNIPPET_CHARS * 2) / 3).map(([, t]) => t)).size
    if (within > most) [center, most] = [at, within]
  }
  let start = Math.max(0, center - SNIPPET_CHARS / 3)
  let end = Math.min(passage.length, start + SNIPPET_CHARS)
  start = Math.max(0, end - SNIPPET_CHARS)
  if (start > 0) start = passage.indexOf(' ', start) + 1 || start
  if (end < passage.length) end = passage.lastIndexOf(' ', end) > start ? passage.lastIndexOf(' ', end) : end
  const text = passage.slice(start, end).replace(/\s+/g, ' ').trim()
  return (start > 0 ? '…' : '') + text + (end < passage.length ? '…' : '')
}
