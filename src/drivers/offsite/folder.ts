import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { checkOffsiteKey, OffsiteMissingError, OffsiteUnavailableError, type OffsiteDestination, type OffsiteObject, type PutHint } from './types'

/** Suffix of an object being written: never listed; swept an hour after it was last touched. */
const PARTIAL = '.partial'
const SWEEP_AFTER_MS = 60 * 60 * 1000

/**
 * The `file:///PATH` destination: a mounted folder (NFS, a second disk). The folder itself must
 * exist (an unmounted share must not fill the empty mount point on the box's own disk); what is
 * under it Berth creates, 0700. Each object is written to `{key}.partial-{random}`, synced, and
 * renamed into place, so a copy is whole or absent. Contracts in ./types.ts.
 */
export class FolderDestination implements OffsiteDestination {
  readonly describe: string

  constructor(private root: string) {
    this.describe = `file://${root}`
  }

  async put(key: string, body: ReadableStream<Uint8Array>, _hint?: PutHint): Promise<{ sizeBytes: number }> {
    const dest = this.path(key)
    await this.requireRoot()
    const partial = `${dest}${PARTIAL}-${randomBytes(4).toString('hex')}`
    try {
      await mkdir(dirname(dest), { recursive: true, mode: 0o700 })
      const file = await open(partial, 'w', 0o600)
      let sizeBytes = 0
      try {
        const reader = body.getReader()
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          const chunk = r.value
          let off = 0
          while (off < chunk.byteLength) off += (await file.write(chunk, off)).bytesWritten
          sizeBytes += chunk.byteLength
        }
        await file.sync()
      } finally {
        await file.close()
      }
      await rename(partial, dest)
      await syncFolder(dirname(dest))
      return { sizeBytes }
    } catch (err) {
      await rm(partial, { force: true }).catch(() => {})
      throw failure(err, this.describe)
    }
  }

  async get(key: string): Promise<ReadableStream<Uint8Array>> {
    const path = this.path(key)
    try {
      await stat(path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        await this.requireRoot()
        throw new OffsiteMissingError(`No object ${key} in ${this.describe}`)
      }
      throw failure(err, this.describe)
    }
    return Bun.file(path).stream()
  }

  async list(prefix: string): Promise<OffsiteObject[]> {
    checkOffsiteKey(prefix, { prefix: true })
    await this.requireRoot()
    const found: OffsiteObject[] = []
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : ''
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries
      try {
        entries = await readdir(dir, { withFileTypes: true })
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
        throw failure(err, this.describe)
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name
        if (e.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(join(dir, e.name), key)
        } else if (e.isFile() && !e.name.includes(PARTIAL) && key.startsWith(prefix)) {
          const s = await stat(join(dir, e.name)).catch(() => null)
          if (s) found.push({ key, sizeBytes: s.size, modifiedAt: s.mtimeMs })
        }
      }
    }
    await walk(folder ? join(this.root, folder) : this.root, folder)
    return found
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key)
    // An unmounted share shows no object: that is not a deletion.
    await this.requireRoot()
    try {
      await rm(path, { force: true })
    } catch (err) {
      throw failure(err, this.describe)
    }
  }

  async probe(): Promise<void> {
    const key = `probe/${Date.now()}-${randomBytes(4).toString('hex')}`
    const text = `berth probe ${key}`
    await this.put(key, new Response(text).body!)
    const back = await new Response(await this.get(key)).text()
    await this.delete(key)
    if (back !== text) throw new OffsiteUnavailableError('other', `${this.describe} gave back other bytes than were written; check the mount`)
  }

  async sweep(): Promise<void> {
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
      for (const e of entries) {
        const path = join(dir, e.name)
        if (e.isDirectory()) await walk(path)
        else if (e.name.includes(PARTIAL)) {
          const s = await stat(path).catch(() => null)
          if (s && Date.now() - s.mtimeMs > SWEEP_AFTER_MS) await rm(path, { force: true }).catch(() => {})
        }
      }
    }
    await walk(this.root)
  }

  private path(key: string): string {
    checkOffsiteKey(key)
    return join(this.root, key)
  }

  private async requireRoot(): Promise<void> {
    const s = await stat(this.root).catch(() => null)
    if (!s?.isDirectory()) throw new OffsiteUnavailableError('bucket', `${this.describe} is not a folder on this box; create or mount it (Berth does not create it, so an unmounted share does not fill the local disk)`)
  }
}

function failure(err: unknown, where: string): Error {
  if (err instanceof OffsiteUnavailableError || err instanceof OffsiteMissingError) return err
  const code = (err as NodeJS.ErrnoException).code
  if (code === 'ENOSPC' || code === 'EDQUOT') return new OffsiteUnavailableError('full', `${where} is full; free space or grow it`)
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new OffsiteUnavailableError('credentials', `${where} refuses writes (${code}); let Berth's user (root) write there`)
  return new OffsiteUnavailableError('other', `${where}: ${(err as Error).message}`)
}

async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
