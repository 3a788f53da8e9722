/**
 * A minimal POSIX ustar writer, enough for Docker build contexts and image root filesystems:
 * regular files, directories and symbolic links with explicit modes and owners.
 *
 * Every entry gets the same fixed mtime, so the same entries always give the same bytes: the
 * image builder hashes contexts, and Docker's build cache keys ADD on the archive's content.
 */
export type TarEntry =
  | { type: 'file'; path: string; data: string | Uint8Array; mode?: number; uid?: number; gid?: number }
  | { type: 'dir'; path: string; mode?: number; uid?: number; gid?: number }
  | { type: 'symlink'; path: string; target: string; uid?: number; gid?: number }

const BLOCK = 512
/** 2024-01-01T00:00:00Z; any constant works, zero makes some tools warn. */
const MTIME = 1_704_067_200

/**
 * Packs `entries` in order into one archive.
 *
 * @example
 * makeTar([{ type: 'file', path: 'Dockerfile', data: 'FROM scratch\n' }])
 */
export function makeTar(entries: TarEntry[]): Uint8Array {
  const chunks: Uint8Array[] = []
  for (const entry of entries) {
    const data = entry.type === 'file' ? toBytes(entry.data) : new Uint8Array(0)
    chunks.push(header(entry, data.length))
    if (data.length > 0) {
      chunks.push(data)
      const pad = (BLOCK - (data.length % BLOCK)) % BLOCK
      if (pad) chunks.push(new Uint8Array(pad))
    }
  }
  chunks.push(new Uint8Array(BLOCK * 2))
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

function header(entry: TarEntry, size: number): Uint8Array {
  const h = new Uint8Array(BLOCK)
  const path = entry.path.replace(/^\/+/, '') + (entry.type === 'dir' && !entry.path.endsWith('/') ? '/' : '')
  const [prefix, name] = splitPath(path)
  const defaultMode = entry.type === 'dir' ? 0o755 : entry.type === 'symlink' ? 0o777 : 0o644
  const mode = 'mode' in entry && entry.mode !== undefined ? entry.mode : defaultMode
  writeString(h, 0, 100, name)
  writeOctal(h, 100, 8, mode)
  writeOctal(h, 108, 8, entry.uid ?? 0)
  writeOctal(h, 116, 8, entry.gid ?? 0)
  writeOctal(h, 124, 12, size)
  writeOctal(h, 136, 12, MTIME)
  h.fill(0x20, 148, 156)
  h[156] = ({ file: 0x30, dir: 0x35, symlink: 0x32 } as const)[entry.type]
  if (entry.type === 'symlink') writeString(h, 157, 100, entry.target)
  writeString(h, 257, 6, 'ustar')
  writeString(h, 263, 2, '00')
  writeString(h, 345, 155, prefix)
  const sum = h.reduce((n, b) => n + b, 0)
  writeString(h, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ')
  return h
}

/** ustar keeps names up to 100 bytes, plus a 155-byte prefix split at a slash. */
function splitPath(path: string): [string, string] {
  if (Buffer.byteLength(path) <= 100) return ['', path]
  const cut = path.lastIndexOf('/', path.length - 2)
  const [prefix, name] = [path.slice(0, cut), path.slice(cut + 1)]
  if (cut <= 0 || Buffer.byteLength(prefix) > 155 || Buffer.byteLength(name) > 100) throw new Error(`tar: path too long: ${path}`)
  return [prefix, name]
}

function writeString(h: Uint8Array, at: number, len: number, value: string) {
  const bytes = new TextEncoder().encode(value)
  if (bytes.length > len) throw new Error(`tar: '${value}' does not fit in ${len} bytes`)
  h.set(bytes, at)
}

function writeOctal(h: Uint8Array, at: number, len: number, value: number) {
  writeString(h, at, len, value.toString(8).padStart(len - 1, '0') + '\0')
}

const toBytes = (data: string | Uint8Array) => (typeof data === 'string' ? new TextEncoder().encode(data) : data)
