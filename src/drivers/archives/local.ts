import { copyFile, mkdir, open, readdir, rename, rm, rmdir, stat, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ArchiveMissingError, checkArchiveKey, type ArchiveStore } from './types'

/** Suffix of an object being written; never listed, replaced by the next put of its key. */
const PARTIAL = '.partial'

/**
 * The built-in archive store: one file per key under `root` (`{data_dir}/archives` by default),
 * so `{root}/{site_id}/{archive_id}.tar.zst`. Folders are mode 0700 (Berth runs as root; site
 * archives are nobody else's to read). Contracts in ./types.ts.
 *
 * @example
 *   const store = new LocalArchiveStore('/var/lib/berth/archives')
 *   await store.put(`${siteId}/${id}.tar.zst`, '/var/lib/berth/archives/.work/x.tar.zst')
 */
export class LocalArchiveStore implements ArchiveStore {
  readonly name = 'local'

  constructor(private root: string) {}

  async put(key: string, fromFile: string): Promise<{ sizeBytes: number }> {
    const dest = this.path(key)
    await mkdir(dirname(dest), { recursive: true, mode: 0o700 })
    const partial = dest + PARTIAL
    let copied = false
    try {
      await rename(fromFile, partial)
    } catch (err) {
      // Another file system (a store folder on its own disk): copy, then drop the source.
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err
      await copyFile(fromFile, partial)
      copied = true
    }
    await fsync(partial)
    await rename(partial, dest)
    await fsync(dirname(dest))
    if (copied) await rm(fromFile, { force: true })
    return { sizeBytes: (await stat(dest)).size }
  }

  async get(key: string, toFile: string): Promise<void> {
    try {
      await copyFile(this.path(key), toFile)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ArchiveMissingError(`No archive under ${key}`)
      throw err
    }
  }

  async read(key: string): Promise<{ stream: ReadableStream<Uint8Array>; sizeBytes: number }> {
    const file = this.path(key)
    // Opened now, so a missing archive is told here rather than by the stream's first read.
    const handle = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new ArchiveMissingError(`No archive under ${key}`) : err
    })
    const { size } = await handle.stat().catch(async (err) => {
      await handle.close().catch(() => {})
      throw err
    })
    return { stream: readAll(handle), sizeBytes: size }
  }

  async delete(key: string): Promise<void> {
    const file = this.path(key)
    await rm(file, { force: true })
    await rm(file + PARTIAL, { force: true })
    // The site's folder goes with its last archive; a folder still holding files stays.
    await rmdir(dirname(file)).catch(() => {})
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = []
    const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
      let entries
      try {
        entries = await readdir(dir, { withFileTypes: true })
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
        throw err
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name
        if (e.isDirectory() && depth < 4 && !e.name.startsWith('.')) await walk(join(dir, e.name), key, depth + 1)
        else if (e.isFile() && !e.name.endsWith(PARTIAL) && key.startsWith(prefix)) keys.push(key)
      }
    }
    // Only the folder the prefix names is read, not the whole store.
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : ''
    if (folder) checkArchiveKey(folder, { prefix: true })
    await walk(folder ? join(this.root, folder) : this.root, folder, folder ? folder.split('/').length : 0)
    return keys
  }

  private path(key: string): string {
    checkArchiveKey(key)
    return join(this.root, key)
  }
}

/**
 * The file behind `handle` as a stream of 1 MiB chunks, closed at its end or when the reader
 * cancels. An archive deleted while it is read is read to its end (the open file stays).
 */
function readAll(handle: FileHandle): ReadableStream<Uint8Array> {
  const close = () => handle.close().catch(() => {})
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const buffer = new Uint8Array(CHUNK)
        const { bytesRead } = await handle.read(buffer, 0, CHUNK, null)
        if (bytesRead === 0) {
          await close()
          controller.close()
        } else {
          controller.enqueue(buffer.subarray(0, bytesRead))
        }
      } catch (err) {
        await close()
        controller.error(err)
      }
    },
    cancel: close,
  }, { highWaterMark: 0 })
}

const CHUNK = 128 * 1024

async function fsync(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
