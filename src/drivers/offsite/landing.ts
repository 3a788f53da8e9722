import { createReadStream, createWriteStream } from 'node:fs'
import { chmod, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createZstdDecompress } from 'node:zlib'
import { PRIVATE_MODE, writePrivateFile } from '../../lib/private-file'
import type { Received } from '../../domain/offsite'

/** Streams move 1 MiB at a time, as the archive driver's (drivers/archives/home-tar.ts). */
const CHUNK = 1 << 20

/**
 * The files `berth restore` writes on this box (RestoreFiles of domain/offsite/restore.ts):
 * what comes from off the box lands in a work folder first (0700, files 0600), is checked there
 * by the caller, and only then takes its place. The store and the certificates hold secrets:
 * 0600 files in 0700 folders, whatever the umask and whatever the tar says.
 */
export class LocalLanding {
  constructor(private workDir: string) {}

  async entries(dir: string): Promise<string[]> {
    try {
      return await readdir(dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
  }

  async receive(plain: ReadableStream<Uint8Array>, name: string): Promise<Received> {
    // One plain file name in the work folder: a name from off the box never climbs out of it.
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(name) || name.includes('..')) {
      await plain.cancel().catch(() => {})
      throw new Error(`${JSON.stringify(name).slice(0, 80)} is not a work file name`)
    }
    await mkdir(this.workDir, { recursive: true, mode: 0o700 })
    const file = join(this.workDir, name)
    const handle = await open(file, 'w', PRIVATE_MODE)
    const hash = new Bun.CryptoHasher('sha256')
    let bytes = 0
    try {
      const reader = plain.getReader()
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        hash.update(r.value)
        bytes += r.value.byteLength
        let off = 0
        while (off < r.value.byteLength) off += (await handle.write(r.value, off)).bytesWritten
      }
      await handle.sync()
    } catch (err) {
      await handle.close()
      await rm(file, { force: true })
      throw err
    }
    await handle.close()
    return { file, sha256: hash.digest('hex'), bytes }
  }

  /**
   * Decompresses into `{database}.restoring`, syncs, removes a -wal and -shm left by another
   * store (SQLite would replay them over the new file), and renames it into place.
   */
  async installStore(file: string, database: string): Promise<void> {
    await mkdir(dirname(database), { recursive: true, mode: 0o700 })
    const partial = `${database}.restoring`
    const out = await open(partial, 'w', PRIVATE_MODE)
    await out.chmod(PRIVATE_MODE)
    try {
      await pipeline(createReadStream(file, { highWaterMark: CHUNK }), createZstdDecompress({ chunkSize: CHUNK }), createWriteStream('', { fd: out.fd, autoClose: false, highWaterMark: CHUNK }))
      await out.sync()
    } catch (err) {
      await out.close()
      await rm(partial, { force: true })
      throw new Error(`the store copy does not decompress: ${(err as Error).message}`)
    }
    await out.close()
    await rm(`${database}-wal`, { force: true })
    await rm(`${database}-shm`, { force: true })
    await rename(partial, database)
  }

  /**
   * Extracts the tar into `{dir}.restoring` with GNU tar (members with `..` refused, owners not
   * kept: everything is Berth's), makes folders 0700 and files 0600, and swaps it in for `dir`.
   */
  async installSecretsKey(text: string, file: string): Promise<void> {
    writePrivateFile(file, text)
  }

  async installTls(file: string, dir: string): Promise<void> {
    const partial = `${dir}.restoring`
    await rm(partial, { recursive: true, force: true })
    await mkdir(partial, { recursive: true, mode: 0o700 })
    const proc = Bun.spawn(['tar', '--extract', '--file', file, '--directory', partial, '--no-same-owner', '--no-same-permissions'], { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) {
      await rm(partial, { recursive: true, force: true })
      throw new Error(`the certificates copy does not untar (exit ${code}): ${stderr.trim().split('\n').slice(-2).join('; ')}`)
    }
    await makePrivate(partial)
    await rm(dir, { recursive: true, force: true })
    await rename(partial, dir)
  }

  async discard(file: string): Promise<void> {
    await rm(file, { force: true })
  }
}

/** Folders 0700 and regular files 0600 under `dir`; symlinks are removed (a copy holds none). */
async function makePrivate(dir: string): Promise<void> {
  await chmod(dir, 0o700)
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    const st = await lstat(path)
    if (st.isDirectory()) await makePrivate(path)
    else if (st.isFile()) await chmod(path, PRIVATE_MODE)
    else await rm(path, { force: true })
  }
}
