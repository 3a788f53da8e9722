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
 * The files are read by site-files.ts over the site's read-only reader (never outside public/,
 * links never followed: drivers/files/site-reader.ts), turned
 * into passages by page-text.ts, and questions into FTS5 terms by query.ts.
 */
import type { Database } from 'bun:sqlite'
import type { SiteReader } from '../../drivers/files/site-reader'
import { openPrivateDatabase, removeDatabaseFiles } from '../../store/private-database'
import { questionTerms, snippetOf } from './query'
import { listFiles, readPage, type FileEntry, type ReadPage } from './site-files'

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

/** A page's passages have rowids id*4096 .. id*4096+4095, so a page is deleted by rowid range. */
const ROWID_SHIFT = 12
const MAX_PASSAGES = 2 ** ROWID_SHIFT
/** Changed files read before their batch is written: bounds memory whatever the site holds. */
const BATCH_BYTES = 4 * 1024 * 1024
const SCHEMA_VERSION = 1
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

/**
 * One site's index. Not shared between sites: each site has its own file, so one site's
 * questions can never reach another's pages.
 *
 * @example
 * const index = SiteIndex.open(`${dataDir}/modules/chatbot/${siteId}.db`, { maxBytes: 50 * 1024 ** 2 })
 * await siteFiles.read(slug, (files) => index.sync(files))
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
    const db = openPrivateDatabase(file)
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
    removeDatabaseFiles(this.file)
  }

  /**
   * Brings the index in line with the files under the site's public/ (read through `files`, which
   * must stay open until the promise settles): reads only the files whose size or mtime changed,
   * drops the pages whose files are gone. A missing public/, or one that is a link, counts as an
   * empty site. Stops adding at the first page that would take the index over
   * `maxBytes`; that page and the changed ones after it count as skipped, and the stale versions
   * of changed pages are removed rather than kept.
   */
  sync(files: SiteReader): Promise<SyncResult> {
    const run = this.queue.then(() => this.syncNow(files))
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

  private async syncNow(reader: SiteReader): Promise<SyncResult> {
    const result: SyncResult = { added: 0, updated: 0, removed: 0, skipped: 0, bytes: 0 }
    const { files, skipped } = await listFiles(reader)
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
      const page = await readPage(reader, entry, MAX_PASSAGES)
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
