import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createPrivateFile } from '../lib/private-file'

/**
 * Consistent copies of the store's file, for the copies off the box (domain/offsite). Never the
 * live file: `VACUUM INTO` writes a new database from one read transaction, so the copy is one
 * moment of the store whatever is written meanwhile (WAL readers do not block the writer).
 *
 * The copy is made by a connection of its own in a worker thread: on the main thread, `VACUUM
 * INTO` of a store with 5,000 sites (97 MB: keys, 35,000 archives, 450,000 daily metric rows)
 * held the event loop for 310-610 ms, every request waiting; from the worker the longest gap of
 * the event loop was 4-36 ms, once 100 ms under load (bun run bench:store-copy, docs/benchmarks.md).
 * The worker is code in a string, so the compiled binary needs no file of its own for it.
 */
const WORKER_CODE = `
import { Database } from 'bun:sqlite'
self.onmessage = (event) => {
  const { from, to } = event.data
  try {
    const db = new Database(from, { readonly: true })
    try {
      db.exec('PRAGMA busy_timeout = 5000')
      db.prepare('VACUUM INTO ?').run(to)
    } finally {
      db.close()
    }
    postMessage({ ok: true })
  } catch (err) {
    postMessage({ ok: false, error: String((err && err.message) || err) })
  }
}
`

/** A work file left by a process that stopped mid-copy is removed after this long. */
const STALE_MS = 60 * 60 * 1000

/** A copy of the store on its way off the box. */
export interface StoreCopy {
  /** The copy's bytes, zstd-compressed as they are read (the file stays uncompressed on disk). */
  stream(): ReadableStream<Uint8Array>
  /** Removes the work file. Idempotent. */
  discard(): Promise<void>
}

/**
 * Makes copies of the store at `dbPath` into `workDir` (created 0700; `{data_dir}/offsite-work`),
 * each file 0600 (it holds every secret the store does) until `discard`.
 */
export class StoreCopies {
  constructor(private dbPath: string, private workDir: string) {}

  async take(): Promise<StoreCopy> {
    await mkdir(this.workDir, { recursive: true, mode: 0o700 })
    await this.clearStale()
    const file = join(this.workDir, `store-${Date.now()}-${crypto.randomUUID().slice(0, 8)}.db`)
    // VACUUM INTO takes an empty file as its target: made 0600 first, so the copy never is wider.
    createPrivateFile(file)
    try {
      await vacuumInto(this.dbPath, file)
    } catch (err) {
      await rm(file, { force: true })
      throw err
    }
    return {
      stream: () => Bun.file(file).stream().pipeThrough(new CompressionStream('zstd' as CompressionFormat)),
      discard: () => rm(file, { force: true }),
    }
  }

  private async clearStale(): Promise<void> {
    for (const name of await readdir(this.workDir).catch(() => [] as string[])) {
      const path = join(this.workDir, name)
      const s = await stat(path).catch(() => null)
      if (s && Date.now() - s.mtimeMs > STALE_MS) await rm(path, { force: true }).catch(() => {})
    }
  }
}

let workerUrl: string | undefined

/** `VACUUM INTO to` of the database at `from`, on a read-only connection in a worker thread. */
function vacuumInto(from: string, to: string): Promise<void> {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_CODE], { type: 'application/javascript' }))
  const worker = new Worker(workerUrl)
  return new Promise<void>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<{ ok: boolean; error?: string }>) => {
      if (event.data.ok) resolve()
      else reject(new Error(`could not copy the store: ${event.data.error}`))
    }
    worker.onerror = (event) => reject(new Error(`could not copy the store: ${event.message}`))
    worker.postMessage({ from, to })
  }).finally(() => worker.terminate())
}
