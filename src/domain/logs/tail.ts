import type { ReadHandle } from '../../drivers/files/types'

export interface TailOptions {
  /** How many lines to return at most. */
  lines: number
  /**
   * Which lines count, called newest line first (so a filter may pair a response with the request
   * line above it). Blank lines never reach it.
   */
  keep?: (line: string) => boolean
  /** Bytes read from the end at most; a search that finds too few lines stops there. */
  maxScanBytes?: number
  chunkBytes?: number
  /** Longer lines are cut to this many bytes and marked with TRUNCATED_MARK. */
  maxLineBytes?: number
}

export const DEFAULT_MAX_SCAN_BYTES = 16 * 1024 * 1024
const DEFAULT_CHUNK_BYTES = 64 * 1024
const DEFAULT_MAX_LINE_BYTES = 8 * 1024
export const TRUNCATED_MARK = ' [line truncated]'

const NL = 0x0a

/**
 * The last `lines` lines of an open file that `keep` accepts, oldest first, reading backwards in
 * chunks from the size the file has now: a 30 MB log costs a few reads, not 30 MB of memory.
 * Memory stays under one chunk plus one (cut) line. A line that starts before the scanned window
 * is dropped, not shown half. Bytes that are not UTF-8 are replaced (U+FFFD).
 */
export async function tailLines(file: ReadHandle, opts: TailOptions): Promise<string[]> {
  const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES
  const maxLine = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const size = (await file.stat()).size
  const stopAt = Math.max(0, size - (opts.maxScanBytes ?? DEFAULT_MAX_SCAN_BYTES))
  const decoder = new TextDecoder('utf-8')
  const newestFirst: string[] = []
  const emit = (bytes: Uint8Array) => {
    let line = decoder.decode(bytes.length > maxLine ? bytes.subarray(0, maxLine) : bytes)
    if (line.endsWith('\r')) line = line.slice(0, -1)
    if (line.trim() === '') return
    if (opts.keep && !opts.keep(line)) return
    newestFirst.push(bytes.length > maxLine ? line + TRUNCATED_MARK : line)
  }
  // The start of the line that runs past the chunk read last; only its first maxLine bytes are
  // kept (the rest is never shown).
  let carry: Uint8Array = new Uint8Array(0)
  let pos = size
  while (pos > stopAt && newestFirst.length < opts.lines) {
    const len = Math.min(chunkBytes, pos - stopAt)
    pos -= len
    const chunk = await readAt(file, pos, len)
    const data = carry.length > 0 ? concat(chunk, carry) : chunk
    let end = data.length
    for (let nl = data.lastIndexOf(NL, end - 1); nl >= 0 && newestFirst.length < opts.lines; nl = data.lastIndexOf(NL, end - 1)) {
      emit(data.subarray(nl + 1, end))
      end = nl
      if (end === 0) break
    }
    carry = data.subarray(0, Math.min(end, maxLine + 1))
  }
  if (pos === 0 && carry.length > 0 && newestFirst.length < opts.lines) emit(carry)
  return newestFirst.reverse()
}

async function readAt(file: ReadHandle, position: number, length: number): Promise<Uint8Array> {
  const buffer = new Uint8Array(length)
  let done = 0
  while (done < length) {
    const { bytesRead } = await file.read(buffer, done, length - done, position + done)
    // The file shrank (rotated or truncated) while being read: what was read is all there is.
    if (bytesRead === 0) return buffer.subarray(0, done)
    done += bytesRead
  }
  return buffer
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}
