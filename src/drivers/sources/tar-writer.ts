import type { FileHandle } from 'node:fs/promises'

/**
 * Writes the checked tree as one plain tar in GNU's format (what `tar -x` in the site's container
 * reads): names and link targets as the archive gave them, byte for byte (latin1 strings), long
 * ones in GNU `L`/`K` headers (no charset conversion, unlike pax); modes without setuid,
 * setgid or sticky, the owner's read and write (and a folder's search) always on; owner 0
 * (ignored when the site's user extracts); one modification time, the conversion's. Headers are
 * gathered and written 1 MiB at a time; file data goes through as it comes.
 */
const BLOCK = 512
const GNU_MAGIC = Buffer.from('ustar  \0', 'latin1')

export type WrittenKind = 'file' | 'folder' | 'symbolic link' | 'hard link'
const TYPE: Record<WrittenKind, string> = { file: '0', 'hard link': '1', 'symbolic link': '2', folder: '5' }

export class TarWriter {
  private pending: Buffer[] = []
  private pendingBytes = 0
  private position = 0
  private readonly mtime = Math.floor(Date.now() / 1000)

  constructor(private readonly handle: FileHandle) {}

  /** A member's header; a file's `size` bytes must follow through `data`, then `endData`. */
  async header(name: string, kind: WrittenKind, mode: number, size: number, link = ''): Promise<void> {
    const full = kind === 'folder' ? `${name}/` : name
    if (Buffer.byteLength(link, 'latin1') >= 100) await this.longName('K', link)
    if (Buffer.byteLength(full, 'latin1') >= 100) await this.longName('L', full)
    await this.push(headerBlock(full, TYPE[kind], kind === 'folder' ? (mode & 0o777) | 0o700 : (mode & 0o777) | 0o600, size, link, this.mtime))
  }

  async data(chunk: Uint8Array): Promise<void> {
    await this.flush()
    if (chunk.length > 0) await this.handle.write(chunk, 0, chunk.length, this.position)
    this.position += chunk.length
  }

  /** Pads a file's data (of `size` bytes) to its block. */
  async endData(size: number): Promise<void> {
    const pad = (BLOCK - (size % BLOCK)) % BLOCK
    if (pad) await this.push(Buffer.alloc(pad))
  }

  /** The two zero blocks that end an archive, and everything written; the archive's size. */
  async end(): Promise<number> {
    await this.push(Buffer.alloc(2 * BLOCK))
    await this.flush(true)
    return this.position
  }

  private async longName(type: 'L' | 'K', name: string): Promise<void> {
    const bytes = Buffer.from(`${name}\0`, 'latin1')
    await this.push(headerBlock('././@LongLink', type, 0o644, bytes.length, '', this.mtime))
    await this.push(bytes)
    await this.endData(bytes.length)
  }

  private async push(block: Buffer): Promise<void> {
    this.pending.push(block)
    this.pendingBytes += block.length
    if (this.pendingBytes >= 1 << 20) await this.flush()
  }

  private async flush(force = false): Promise<void> {
    if (this.pendingBytes === 0 && !force) return
    const all = Buffer.concat(this.pending)
    this.pending = []
    this.pendingBytes = 0
    if (all.length > 0) await this.handle.write(all, 0, all.length, this.position)
    this.position += all.length
  }
}

function headerBlock(name: string, type: string, mode: number, size: number, link: string, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK)
  h.write(name.slice(0, 100), 0, 100, 'latin1')
  octal(h, 100, 8, mode)
  octal(h, 108, 8, 0)
  octal(h, 116, 8, 0)
  if (size < 8 ** 11) octal(h, 124, 12, size)
  else {
    // GNU base-256 for sizes past 8 GiB: a first byte of 0x80, then the number big-endian.
    h[124] = 0x80
    let n = size
    for (let i = 135; i > 124; i--, n = Math.floor(n / 256)) h[i] = n % 256
  }
  octal(h, 136, 12, mtime)
  h.write(type, 156, 1, 'latin1')
  h.write(link.slice(0, 100), 157, 100, 'latin1')
  GNU_MAGIC.copy(h, 257)
  h.write('root', 265, 32, 'latin1')
  h.write('root', 297, 32, 'latin1')
  h.fill(0x20, 148, 156)
  let sum = 0
  for (const b of h) sum += b
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1')
  return h
}

function octal(h: Buffer, at: number, len: number, n: number): void {
  h.write(`${n.toString(8).padStart(len - 1, '0')}\0`, at, len, 'latin1')
}
