import { createReadStream } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { createGunzip } from 'node:zlib'
import { type Kind, type TarRules, type TarSource, tarEntries } from '../archives/tar-members'
import { InvalidSourceError, SourceTooLargeError, UnsafeSourceError } from './errors'
import { TarWriter } from './tar-writer'
import { type MemberReader, type PlannedMember, SourceMembers, shown } from './tree-rules'
import { zipReader } from './zip'

/**
 * The intake of a tree deployed as an archive (issue 39, item 1): the upload is streamed to a
 * work file on the host (never whole in memory), read twice (its members checked and counted by
 * drivers/sources/tree-rules.ts, then written) and converted to one plain tar that `tar -x` in
 * the site's container extracts as the site's user into the release's folder. The tar holds only
 * what was checked: files, folders, symbolic links that stay inside the tree and hard links to
 * earlier files, by names beneath the tree, one top folder stripped.
 *
 * Bounds: the upload itself at most `maxBytes` (the site's disk); the expanded file data at most
 * `maxBytes`, counted from the headers before any of it is expanded (a zip bomb is refused from
 * its central directory, a tar.gz at the member that passes the limit, after at most `maxBytes`
 * of decompression), and counted again as it is written (a zip's sizes are checked by yauzl
 * against its data); at most `maxFiles` members. So the work file and the tar are at most
 * `maxBytes` each, plus the tar's headers.
 *
 * Returns the tar's path (`{workFile}.tar`), its members and its bytes of file data; the upload
 * is removed. On a refusal (UnsafeSourceError, InvalidSourceError, SourceTooLargeError,
 * TooManyFilesError) both files are removed and nothing else was written.
 */
export interface SourceLimits {
  maxBytes: number
  maxFiles: number
}

export interface CheckedTar {
  tarFile: string
  files: number
  bytes: number
}

export async function toCheckedTar(body: ReadableStream<Uint8Array>, format: 'gzip' | 'zip', workFile: string, limits: SourceLimits): Promise<CheckedTar> {
  const tarFile = `${workFile}.tar`
  try {
    await receive(body, workFile, limits.maxBytes)
    const reader = format === 'zip' ? await zipReader(workFile) : gzipReader(workFile, limits)
    try {
      const members = new SourceMembers(limits)
      await reader.scan(members)
      members.finish()
      const bytes = await write(members.members, reader, tarFile, limits.maxBytes)
      await rm(workFile, { force: true })
      return { tarFile, files: members.members.length, bytes }
    } finally {
      await reader.close()
    }
  } catch (err) {
    await Promise.all([rm(workFile, { force: true }), rm(tarFile, { force: true })])
    throw err
  }
}

/** The upload to `workFile`, refused once it passes `maxBytes`. */
async function receive(body: ReadableStream<Uint8Array>, workFile: string, maxBytes: number): Promise<void> {
  const handle = await open(workFile, 'w', 0o600)
  let received = 0
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      received += chunk.length
      if (received > maxBytes) throw new SourceTooLargeError(maxBytes, received, null)
      await handle.write(chunk, 0, chunk.length, null)
    }
  } finally {
    await handle.close()
  }
  if (received === 0) throw new InvalidSourceError('the body is empty')
}

/** Pass 2: the checked members into one tar; the bytes of file data written. */
async function write(members: PlannedMember[], reader: MemberReader, tarFile: string, maxBytes: number): Promise<number> {
  const handle = await open(tarFile, 'w', 0o600)
  try {
    const out = new TarWriter(handle)
    const files = members.filter((m) => m.kind === 'file')
    let i = 0
    let index = 0
    let total = 0
    /** Headers of every member up to the next file, which `onFile` then writes. */
    const headersUpToFile = async (): Promise<PlannedMember | null> => {
      while (index < members.length) {
        const m = members[index++]
        const link = m.kind === 'file' || m.kind === 'folder' ? '' : m.link
        await out.header(m.parts.join('/'), m.kind, m.mode, m.size, link)
        if (m.kind === 'file') return m
      }
      return null
    }
    await reader.copyFiles(async (size, chunks) => {
      const m = await headersUpToFile()
      if (!m || m !== files[i++] || m.size !== size) throw new InvalidSourceError('the archive read differently the second time')
      let written = 0
      for await (const chunk of chunks) {
        written += chunk.length
        total += chunk.length
        if (written > size || total > maxBytes) throw new SourceTooLargeError(maxBytes, total, shown(m.name))
        await out.data(chunk)
      }
      if (written !== size) throw new InvalidSourceError(`member ${m.name} holds fewer bytes than its header says`)
      await out.endData(size)
    })
    if (await headersUpToFile()) throw new InvalidSourceError('the archive read differently the second time')
    await out.end()
    return total
  } finally {
    await handle.close()
  }
}

const SOURCE_RULES: TarRules = { refuse: (why) => new UnsafeSourceError(null, why), noun: 'a source tree' }

const KIND_OF: Record<Kind, Parameters<SourceMembers['add']>[1]> = {
  file: 'file', folder: 'folder', 'symbolic link': 'symbolic link', 'hard link': 'hard link', fifo: 'fifo', device: 'device',
}

/** A gzip-compressed tar, decompressed as it is read, read by the walk a home's archive is checked with. */
function gzipReader(file: string, limits: SourceLimits): MemberReader {
  // What the decompressed tar may hold besides file data: a header, a long name and padding a member.
  const cap = limits.maxBytes + (limits.maxFiles + 2) * 8 * 1024 + (1 << 20)
  let open: Forward | null = null
  const start = () => {
    open?.close()
    open = new Forward(createReadStream(file).pipe(createGunzip()), cap, limits.maxBytes)
    return open
  }
  return {
    async scan(members) {
      for await (const m of tarEntries(start(), SOURCE_RULES)) members.add(m.name, KIND_OF[m.kind], m.link, m.mode, m.size)
    },
    async copyFiles(onFile) {
      const source = start()
      for await (const m of tarEntries(source, SOURCE_RULES)) {
        if (m.kind === 'file') await onFile(m.size, source.range(m.dataAt, m.size))
      }
    },
    async close() {
      open?.close()
    },
  }
}

/**
 * A forward-only TarSource over the decompressed stream: what lies before the position asked is
 * dropped as it is passed (a member's data skipped is read and dropped, never kept). At most
 * `cap` bytes are decompressed.
 */
class Forward implements TarSource {
  private chunk: Buffer = Buffer.alloc(0)
  private chunkAt = 0
  private readonly it: AsyncIterator<Buffer>
  private done = false
  private pulled = 0

  constructor(private readonly stream: NodeJS.ReadableStream & { destroy(): void }, private readonly cap: number, private readonly maxBytes: number) {
    this.it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  }

  async header(pos: number): Promise<Buffer> {
    await this.skipTo(pos)
    await this.ensure(512)
    return Buffer.from(this.chunk.subarray(0, Math.min(512, this.chunk.length)))
  }

  async bytes(at: number, size: number): Promise<Buffer> {
    await this.skipTo(at)
    await this.ensure(size)
    if (this.chunk.length < size) throw new UnsafeSourceError(null, `it is cut short at byte ${at + this.chunk.length}`)
    return Buffer.from(this.chunk.subarray(0, size))
  }

  /** The `size` bytes at `at`, as they come. */
  async *range(at: number, size: number): AsyncGenerator<Uint8Array> {
    await this.skipTo(at)
    let left = size
    while (left > 0) {
      if (this.chunk.length === 0) {
        const next = await this.pull()
        if (!next) return
        this.chunk = next
      }
      const piece = this.chunk.subarray(0, Math.min(left, this.chunk.length))
      left -= piece.length
      this.chunk = this.chunk.subarray(piece.length)
      this.chunkAt += piece.length
      yield piece
    }
  }

  close(): void {
    this.stream.destroy()
  }

  private async skipTo(pos: number): Promise<void> {
    while (this.chunkAt + this.chunk.length < pos) {
      this.chunkAt += this.chunk.length
      this.chunk = Buffer.alloc(0)
      const next = await this.pull()
      if (!next) return
      this.chunk = next
    }
    const drop = pos - this.chunkAt
    if (drop > 0) {
      this.chunk = this.chunk.subarray(drop)
      this.chunkAt = pos
    }
  }

  /** At least `n` bytes in the current chunk, unless the stream ends first. */
  private async ensure(n: number): Promise<void> {
    while (this.chunk.length < n) {
      const next = await this.pull()
      if (!next) return
      this.chunk = this.chunk.length === 0 ? next : Buffer.concat([this.chunk, next])
    }
  }

  /** The next decompressed chunk, or null at the end. */
  private async pull(): Promise<Buffer | null> {
    if (this.done) return null
    let next: IteratorResult<Buffer>
    try {
      next = await this.it.next()
    } catch (err) {
      this.done = true
      throw new InvalidSourceError(`it is not a gzip-compressed tar, or it is damaged (${(err as { code?: string }).code ?? 'unreadable'})`)
    }
    if (next.done) {
      this.done = true
      return null
    }
    this.pulled += next.value.length
    if (this.pulled > this.cap) throw new SourceTooLargeError(this.maxBytes, this.pulled, null)
    return next.value
  }
}
