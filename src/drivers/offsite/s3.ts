import { randomBytes } from 'node:crypto'
import type { Config } from '../../config/config'
import { codeOf, s3Failure, StalledError, withDeadline, withRetries, type RetryPolicy } from './s3-failures'
import { abortUpload, beginUpload, completeUpload, listIncompleteUploads, putPart, type BucketAddress } from './s3-uploads'
import { checkOffsiteKey, OffsiteMissingError, OffsiteUnavailableError, type OffsiteDestination, type OffsiteObject, type PutHint } from './types'

const MiB = 1024 * 1024

/** The most parts one multipart upload may have (S3's limit, shared by the compatible services). */
const MAX_PARTS = 10_000

/**
 * How the S3 destination moves bytes. The defaults are measured (docs/benchmarks.md, "Copies off
 * the box"): 5 MiB parts, one being put while the next is read, keep Berth well within 64 MiB of
 * its idle memory while it copies a 1 GiB archive; a larger part is chosen for a body said to be
 * over about 43 GiB (partSizeFor), since S3 allows 10,000 parts.
 */
export interface S3Tuning {
  /** Bytes per part of a multipart upload (S3: 5 MiB at least); an object of one part or less is one PUT. */
  partSize: number
  /** Back-off of every request, each part of a large put included (it is sent again from its buffer). */
  retry: RetryPolicy
  /** A request (a part's included) not answered by then fails as 'unreachable'. */
  requestTimeoutMs: number
  /** A get whose server gives no bytes for this long fails as 'unreachable'. */
  stallTimeoutMs: number
  /** Incomplete multipart uploads older than this are aborted by `sweep`. */
  sweepAfterMs: number
}

export const S3_TUNING: S3Tuning = {
  partSize: 5 * MiB,
  retry: { attempts: 4, firstDelayMs: 500 },
  requestTimeoutMs: 60_000,
  stallTimeoutMs: 120_000,
  sweepAfterMs: 60 * 60 * 1000,
}

/**
 * The part size for a body of about `expected` bytes: the configured one, or, when 10,000 of
 * those would not hold it (48.8 GiB at 5 MiB), whole MiB enough for 9,000 parts (a tenth spare
 * for a body a little larger than said). An 80 GB archive goes in 9 MiB parts.
 */
export function partSizeFor(expected: number | undefined, configured: number): number {
  if (!expected || expected <= configured * (MAX_PARTS - 1000)) return configured
  return Math.ceil(expected / (MAX_PARTS - 1000) / MiB) * MiB
}

export type S3Settings = Pick<Config['offsite'], 'url' | 'endpoint' | 'region' | 'accessKeyId' | 'secretAccessKey' | 'pathStyle'>

/**
 * The `s3://BUCKET/PREFIX` destination, for any S3-compatible service (AWS, Backblaze B2,
 * Wasabi, Hetzner, MinIO, Garage; tested against s3rver). Small objects, reads, listings and
 * deletes go through Bun's built-in S3 client (`Bun.S3Client`, no new dependency); a large body
 * is a multipart upload of our own (./s3-uploads.ts, signed by ./s3-sign.ts) from two reused part
 * buffers, since Bun's own multipart upload grew Berth by 51 to 80 MiB during a 1 GiB copy
 * (docs/benchmarks.md, "Copies off the box"). Added to the client: deadlines (it waits forever
 * on a server that stopped answering), back-off, the error kinds, and the listing and abort of
 * incomplete uploads for `sweep`. Contracts in ./types.ts.
 */
export class S3Destination implements OffsiteDestination {
  readonly describe: string
  private readonly where: string
  private readonly client: Bun.S3Client
  private readonly root: string
  private readonly address: BucketAddress
  private readonly tuning: S3Tuning
  /** Full keys of the puts running now, which `sweep` leaves alone however long they take. */
  private readonly running = new Map<string, number>()

  constructor(private readonly settings: S3Settings, tuning: Partial<S3Tuning> = {}) {
    const { bucket, root } = parseS3Url(settings.url)
    this.root = root
    this.tuning = { ...S3_TUNING, ...tuning }
    const base = new URL(settings.endpoint || `https://s3.${settings.region}.amazonaws.com`)
    // Path style: ENDPOINT/BUCKET/KEY. Virtual-hosted style: BUCKET.ENDPOINT/KEY, which Bun's
    // client takes as an endpoint that already names the bucket.
    const endpoint = settings.pathStyle ? base.origin : `${base.protocol}//${bucket}.${base.host}`
    this.client = new Bun.S3Client({
      endpoint,
      bucket,
      virtualHostedStyle: !settings.pathStyle,
      region: settings.region,
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey,
    })
    this.address = {
      bucketUrl: settings.pathStyle ? `${base.origin}/${bucket}/` : `${endpoint}/`,
      credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey, region: settings.region },
    }
    this.describe = `s3://${bucket}/${root}`.replace(/\/$/, '')
    this.where = `${this.describe} (${base.host})`
  }

  async put(key: string, body: ReadableStream<Uint8Array>, hint?: PutHint): Promise<{ sizeBytes: number }> {
    checkOffsiteKey(key)
    const partSize = partSizeFor(hint?.expectedBytes, this.tuning.partSize)
    const full = this.root + key
    const reader = body.getReader()
    this.running.set(full, (this.running.get(full) ?? 0) + 1)
    try {
      const first = await readUpTo(reader, partSize + 1)
      if (first.done) {
        // One part or less: one PUT, its bytes in hand, so the whole request can be retried.
        const bytes = Buffer.concat(first.chunks)
        await this.request(`put ${key}`, () => this.client.write(full, bytes, { type: 'application/octet-stream' }))
        return { sizeBytes: bytes.byteLength }
      }
      return await this.putMultipart(full, first.chunks, reader, partSize)
    } catch (err) {
      await reader.cancel(err).catch(() => {})
      throw this.failure(err)
    } finally {
      const n = (this.running.get(full) ?? 1) - 1
      if (n > 0) this.running.set(full, n)
      else this.running.delete(full)
    }
  }

  async get(key: string): Promise<ReadableStream<Uint8Array>> {
    checkOffsiteKey(key)
    const file = this.client.file(this.root + key)
    try {
      // The first bytes are awaited here, so a missing object (NoSuchKey), bucket or key shows
      // now, with the code of S3's answer (a HEAD answer has no body to carry one).
      const opened = await this.request(`get ${key}`, async () => {
        const reader = file.stream().getReader()
        try {
          return { reader, first: await reader.read() }
        } catch (err) {
          reader.cancel(err).catch(() => {})
          throw err
        }
      })
      return guardDownload(opened.reader, opened.first, this.tuning.stallTimeoutMs, (err) => this.failure(err))
    } catch (err) {
      if (codeOf(err) === 'NoSuchKey') throw new OffsiteMissingError(`No object ${key} in ${this.describe}`)
      throw this.failure(err)
    }
  }

  async list(prefix: string): Promise<OffsiteObject[]> {
    checkOffsiteKey(prefix, { prefix: true })
    const found: OffsiteObject[] = []
    let continuationToken: string | undefined
    try {
      for (;;) {
        const page = await this.request(`list ${prefix}`, () => this.client.list({ prefix: this.root + prefix, ...(continuationToken ? { continuationToken } : {}) }))
        for (const o of page.contents ?? []) {
          const key = o.key.slice(this.root.length)
          if (!o.key.startsWith(this.root) || !isOffsiteKey(key)) continue
          found.push({ key, sizeBytes: o.size ?? 0, modifiedAt: o.lastModified ? Date.parse(o.lastModified) : 0 })
        }
        if (!page.isTruncated || !page.nextContinuationToken) return found
        continuationToken = page.nextContinuationToken
      }
    } catch (err) {
      throw this.failure(err)
    }
  }

  async delete(key: string): Promise<void> {
    checkOffsiteKey(key)
    try {
      await this.request(`delete ${key}`, () => this.client.delete(this.root + key))
    } catch (err) {
      if (codeOf(err) === 'NoSuchKey') return
      throw this.failure(err)
    }
  }

  async probe(): Promise<void> {
    const key = `probe/${Date.now()}-${randomBytes(4).toString('hex')}`
    const text = `berth probe ${key}`
    await this.put(key, new Response(text).body!)
    const back = await new Response(await this.get(key)).text()
    await this.delete(key)
    if (back !== text) throw new OffsiteUnavailableError('other', `${this.where} gave back other bytes than were written; check offsite.endpoint`)
  }

  /**
   * Aborts the multipart uploads under the prefix begun more than `sweepAfterMs` ago, except
   * those of puts still running here. A server without ListMultipartUploads (s3rver answers
   * NotImplemented) has nothing swept; a lifecycle rule on the bucket (docs/operations.md) is the
   * second line either way.
   */
  async sweep(): Promise<void> {
    try {
      const uploads = await withRetries(this.tuning.retry, () => listIncompleteUploads(this.address, this.root, this.tuning.requestTimeoutMs))
      const cutoff = Date.now() - this.tuning.sweepAfterMs
      for (const upload of uploads) {
        if (upload.initiatedAt > cutoff || this.running.has(upload.key) || !isOffsiteKey(upload.key.slice(this.root.length))) continue
        await abortUpload(this.address, upload, this.tuning.requestTimeoutMs).catch(() => {})
      }
    } catch {
      // Not offered by this server, or unreachable now: the next sweep tries again.
    }
  }

  /**
   * A large body: a multipart upload of our own (./s3-uploads.ts) from two part buffers, one
   * being filled from the body while the other is put, each reused for the next part, so memory
   * is two parts whatever the body's size. A part is retried with back-off from its buffer; any
   * failure aborts the upload (and what an abort cannot reach is swept later), so a partial
   * object is never visible.
   */
  private async putMultipart(full: string, staged: Uint8Array[], reader: ReadableStreamDefaultReader<Uint8Array>, partSize: number): Promise<{ sizeBytes: number }> {
    const upload = { key: full, uploadId: await this.request('begin upload', () => beginUpload(this.address, full, this.tuning.requestTimeoutMs)) }
    try {
      const fill = partFiller(staged, reader)
      const buffers = [new Uint8Array(partSize), new Uint8Array(partSize)]
      const etags: string[] = []
      let sizeBytes = 0
      let putting: Promise<void> | null = null
      for (let part = 1; ; part++) {
        const buffer = buffers[part % 2]!
        const filled = await fill(buffer)
        if (filled === 0 && part > 1) break
        if (part > MAX_PARTS) {
          throw new OffsiteUnavailableError('full', `${this.where}: the copy is larger than ${(partSize * MAX_PARTS / 1024 ** 3).toFixed(1)} GiB, the most ${MAX_PARTS} parts of ${partSize / MiB} MiB hold`)
        }
        // The buffer just filled is free again only once the part before it was put.
        await putting
        const body = buffer.subarray(0, filled)
        putting = this.request(`part ${part}`, () => putPart(this.address, upload, part, body, this.tuning.requestTimeoutMs)).then((etag) => {
          etags[part - 1] = etag
          // fetch copies each part's body, and the reads and the sealing make garbage at the
          // copy's pace: a collection asked for per part (in the background) keeps it from piling up.
          Bun.gc(false)
        })
        // Awaited before the next part or at the end; until then its failure is not unhandled.
        putting.catch(() => {})
        sizeBytes += filled
        if (filled < partSize) break
      }
      await putting
      await this.request('complete upload', () => completeUpload(this.address, upload, etags, this.tuning.requestTimeoutMs))
      return { sizeBytes }
    } catch (err) {
      await abortUpload(this.address, { ...upload, initiatedAt: 0 }, this.tuning.requestTimeoutMs).catch(() => {})
      throw err
    }
  }

  /** A request that can be repeated whole: a deadline on each try, back-off between them. */
  private request<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    return withRetries(this.tuning.retry, () => withDeadline(attempt(), this.tuning.requestTimeoutMs, `${this.where}: ${what}`))
  }

  private failure(err: unknown): Error {
    if (err instanceof SourceError) {
      const failed = new OffsiteUnavailableError('other', `reading what was being copied to ${this.where} failed: ${(err.cause as Error)?.message ?? err.cause}`)
      failed.cause = err.cause
      return failed
    }
    return s3Failure(err, this.where, [this.settings.secretAccessKey])
  }
}

/** `s3://BUCKET/PREFIX` as the bucket and the prefix every key goes under ('' or ending in `/`). */
export function parseS3Url(url: string): { bucket: string; root: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url)
  if (!m) throw new Error(`offsite.url ${url} is not s3://BUCKET/PREFIX`)
  const prefix = m[2]!.replace(/^\/+|\/+$/g, '')
  return { bucket: m[1]!, root: prefix ? `${prefix}/` : '' }
}

function isOffsiteKey(key: string): boolean {
  try {
    checkOffsiteKey(key)
    return true
  } catch {
    return false
  }
}

/** A failure of the body being copied, not of the destination. */
class SourceError extends Error {}

/** Reads chunks until more than `limit` bytes came or the stream ended. */
async function readUpTo(reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): Promise<{ chunks: Uint8Array[]; done: boolean }> {
  const chunks: Uint8Array[] = []
  let bytes = 0
  while (bytes < limit) {
    const r = await reader.read().catch((err: unknown) => {
      throw new SourceError('source failed', { cause: err })
    })
    if (r.done) return { chunks, done: true }
    chunks.push(r.value)
    bytes += r.value.byteLength
  }
  return { chunks, done: false }
}

/**
 * Fills a part buffer from the staged chunks, then from `reader`: the bytes put in it, fewer than
 * its size only at the body's end. A chunk larger than the room left is split, its rest kept for
 * the next part.
 */
function partFiller(staged: Uint8Array[], reader: ReadableStreamDefaultReader<Uint8Array>): (buffer: Uint8Array) => Promise<number> {
  let rest: Uint8Array | null = null
  let ended = false
  return async (buffer) => {
    let filled = 0
    while (filled < buffer.length) {
      let chunk = rest ?? staged.shift() ?? null
      rest = null
      if (!chunk) {
        if (ended) break
        const r = await reader.read().catch((err: unknown) => {
          throw new SourceError('source failed', { cause: err })
        })
        if (r.done) {
          ended = true
          break
        }
        chunk = r.value
      }
      const n = Math.min(chunk.length, buffer.length - filled)
      buffer.set(chunk.subarray(0, n), filled)
      filled += n
      if (n < chunk.length) rest = chunk.subarray(n)
    }
    return filled
  }
}

/**
 * A download (its first read already done) that fails as OffsiteUnavailableError, not Bun's
 * S3Error, when the connection breaks, and as 'unreachable' when no byte came for `stallMs`.
 */
function guardDownload(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: { done: boolean; value?: Uint8Array },
  stallMs: number,
  failure: (err: unknown) => Error,
): ReadableStream<Uint8Array> {
  let pending: { done: boolean; value?: Uint8Array } | null = first
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      let timer: ReturnType<typeof setTimeout> | undefined
      try {
        let r = pending
        pending = null
        if (!r) {
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new StalledError(`no byte came for ${Math.round(stallMs / 1000)} s`)), stallMs)
          })
          r = await Promise.race([reader.read(), late])
        }
        if (r.done) c.close()
        else c.enqueue(r.value!)
      } catch (err) {
        reader.cancel(err).catch(() => {})
        c.error(failure(err))
      } finally {
        clearTimeout(timer)
      }
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  }, { highWaterMark: 0 })
}
