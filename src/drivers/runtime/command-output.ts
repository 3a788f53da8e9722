/**
 * The output of a command run without a TTY, as the engine sends it (stdout and stderr
 * multiplexed on one stream), each stream kept to its last bytes.
 */

/**
 * The last `keep` bytes of a stream of chunks, in O(keep) memory whatever the stream's length;
 * `truncated` once its start was dropped.
 *
 * @example const tail = new Tail(4); tail.push(bytes('abc')); tail.push(bytes('def')); tail.bytes() // 'cdef'
 */
export class Tail {
  private chunks: Uint8Array[] = []
  private held = 0
  /** Every byte pushed, kept or not. */
  total = 0

  constructor(private readonly keep: number) {}

  push(chunk: Uint8Array): void {
    this.total += chunk.length
    if (this.keep === 0 || chunk.length === 0) return
    if (chunk.length >= this.keep) {
      this.chunks = [chunk.slice(chunk.length - this.keep)]
      this.held = this.keep
      return
    }
    // A copy: a part of a socket's chunk would keep the whole chunk alive.
    this.chunks.push(chunk.slice())
    this.held += chunk.length
    // Whole chunks that the rest already covers go; the last one is cut in bytes().
    while (this.held - this.chunks[0]!.length >= this.keep) this.held -= this.chunks.shift()!.length
  }

  get truncated(): boolean {
    return this.total > this.keep
  }

  /** The kept bytes: the last `keep` of the stream. */
  bytes(): Uint8Array {
    const all = Buffer.concat(this.chunks)
    return all.subarray(Math.max(0, all.length - this.keep))
  }
}

/** Stream ids of the engine's multiplexed attach stream. */
const STDOUT = 1
const STDERR = 2
const HEADER_BYTES = 8

/**
 * Splits the engine's multiplexed stream of an exec without a TTY: frames of an 8-byte header
 * (stream id, 3 zero bytes, big-endian length) and that many bytes of stdout (1) or stderr (2)
 * (Docker Engine API, "Attach to a container", stream format). Frames may be cut anywhere by the
 * socket's chunks; their bytes go to `out` in order.
 */
export class Demultiplexer {
  private header = Buffer.alloc(HEADER_BYTES)
  private headerHave = 0
  private remaining = 0
  private stream = 0

  constructor(private readonly out: { stdout: Tail; stderr: Tail }) {}

  push(chunk: Uint8Array): void {
    let at = 0
    while (at < chunk.length) {
      if (this.remaining === 0) {
        const n = Math.min(HEADER_BYTES - this.headerHave, chunk.length - at)
        this.header.set(chunk.subarray(at, at + n), this.headerHave)
        this.headerHave += n
        at += n
        if (this.headerHave < HEADER_BYTES) return
        this.headerHave = 0
        this.stream = this.header[0]!
        this.remaining = this.header.readUInt32BE(4)
        continue
      }
      const n = Math.min(this.remaining, chunk.length - at)
      const part = chunk.subarray(at, at + n)
      if (this.stream === STDOUT) this.out.stdout.push(part)
      else if (this.stream === STDERR) this.out.stderr.push(part)
      at += n
      this.remaining -= n
    }
  }
}
