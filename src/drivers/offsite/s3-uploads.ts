import { EMPTY_SHA256, encodeKeyPath, signRequest, type S3Credentials } from './s3-sign'

/**
 * Multipart uploads, signed here (./s3-sign.ts) and sent with fetch: begun, each part put from a
 * buffer the caller reuses, completed, aborted; and those begun and never completed under a
 * prefix (what an interrupted copy leaves in the bucket: invisible to listings, but stored and
 * billed). Bun's S3 client has no call for listing or aborting them, and its own multipart upload
 * grew Berth by 51 to 80 MiB during a copy, where parts put from one reused buffer each grow it
 * by about 20 (docs/benchmarks.md, "Copies off the box").
 */

export interface IncompleteUpload {
  /** The full key in the bucket, prefix included. */
  key: string
  uploadId: string
  /** When the upload began (ms since the epoch). */
  initiatedAt: number
}

/** Where requests for one bucket go: `bucketUrl` ends with `/` (path style: `ENDPOINT/BUCKET/`). */
export interface BucketAddress {
  bucketUrl: string
  credentials: S3Credentials
}

/** An answer S3 gave with an error status: its `<Code>`, for s3Failure. */
export class S3ResponseError extends Error {
  constructor(readonly code: string, readonly status: number, message: string) {
    super(message)
  }
}

/**
 * Every incomplete upload whose key starts with `prefix` (ListMultipartUploads, every page).
 * Throws S3ResponseError with code NotImplemented when the server does not have the call (s3rver).
 */
export async function listIncompleteUploads(bucket: BucketAddress, prefix: string, timeoutMs: number): Promise<IncompleteUpload[]> {
  const found: IncompleteUpload[] = []
  let keyMarker = ''
  let uploadIdMarker = ''
  for (let page = 0; page < 1000; page++) {
    const url = new URL(bucket.bucketUrl)
    url.searchParams.set('uploads', '')
    url.searchParams.set('prefix', prefix)
    if (keyMarker) url.searchParams.set('key-marker', keyMarker)
    if (uploadIdMarker) url.searchParams.set('upload-id-marker', uploadIdMarker)
    const xml = await (await send(bucket, 'GET', url, timeoutMs)).text()
    for (const upload of elements(xml, 'Upload')) {
      const key = text(upload, 'Key')
      const uploadId = text(upload, 'UploadId')
      const initiatedAt = Date.parse(text(upload, 'Initiated') ?? '')
      if (key && uploadId && Number.isFinite(initiatedAt)) found.push({ key, uploadId, initiatedAt })
    }
    if (text(xml, 'IsTruncated') !== 'true') break
    keyMarker = text(xml, 'NextKeyMarker') ?? ''
    uploadIdMarker = text(xml, 'NextUploadIdMarker') ?? ''
    if (!keyMarker) break
  }
  return found
}

/** Aborts one upload: its parts are deleted. Already gone is fine. */
export async function abortUpload(bucket: BucketAddress, upload: IncompleteUpload, timeoutMs: number): Promise<void> {
  const url = new URL(encodeKeyPath(upload.key), bucket.bucketUrl)
  url.searchParams.set('uploadId', upload.uploadId)
  try {
    await send(bucket, 'DELETE', url, timeoutMs)
  } catch (err) {
    if (!(err instanceof S3ResponseError && err.code === 'NoSuchUpload')) throw err
  }
}

/** Begins a multipart upload of `key` (the full key, prefix included); its upload id. */
export async function beginUpload(bucket: BucketAddress, key: string, timeoutMs: number): Promise<string> {
  const url = new URL(encodeKeyPath(key), bucket.bucketUrl)
  url.searchParams.set('uploads', '')
  const xml = await (await send(bucket, 'POST', url, timeoutMs, { headers: { 'content-type': 'application/octet-stream' } })).text()
  const uploadId = text(xml, 'UploadId')
  if (!uploadId) throw new S3ResponseError('InvalidResponse', 200, 'CreateMultipartUpload answered no UploadId')
  return uploadId
}

/**
 * Puts part `partNumber` (from 1) of an upload from `body`, which the caller may reuse once
 * this resolves; the part's ETag.
 */
export async function putPart(bucket: BucketAddress, upload: { key: string; uploadId: string }, partNumber: number, body: Uint8Array, timeoutMs: number): Promise<string> {
  const url = new URL(encodeKeyPath(upload.key), bucket.bucketUrl)
  url.searchParams.set('partNumber', String(partNumber))
  url.searchParams.set('uploadId', upload.uploadId)
  const res = await send(bucket, 'PUT', url, timeoutMs, { body })
  await res.arrayBuffer().catch(() => {})
  const etag = res.headers.get('etag')
  if (!etag) throw new S3ResponseError('InvalidResponse', res.status, `part ${partNumber} answered no ETag`)
  return etag
}

/** Completes an upload from its parts' ETags, in order: the object appears, whole. */
export async function completeUpload(bucket: BucketAddress, upload: { key: string; uploadId: string }, etags: readonly string[], timeoutMs: number): Promise<void> {
  const url = new URL(encodeKeyPath(upload.key), bucket.bucketUrl)
  url.searchParams.set('uploadId', upload.uploadId)
  const xml = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`).join('')}</CompleteMultipartUpload>`
  const answer = await (await send(bucket, 'POST', url, timeoutMs, { body: new TextEncoder().encode(xml), headers: { 'content-type': 'application/xml' } })).text()
  // S3 may answer 200 and put the error in the body (a failure after the answer began).
  const code = text(answer, 'Code')
  if (answer.includes('<Error>') && code) throw new S3ResponseError(code, 200, text(answer, 'Message') ?? `CompleteMultipartUpload failed: ${code}`)
}

async function send(bucket: BucketAddress, method: string, url: URL, timeoutMs: number, opts: { body?: Uint8Array; headers?: Record<string, string> } = {}): Promise<Response> {
  const payloadSha256 = opts.body ? new Bun.CryptoHasher('sha256').update(opts.body).digest('hex') : EMPTY_SHA256
  const headers = signRequest({ method, url, payloadSha256, credentials: bucket.credentials, headers: opts.headers })
  const res = await fetch(url, { method, headers, body: opts.body as Uint8Array<ArrayBuffer> | undefined, signal: AbortSignal.timeout(timeoutMs) })
  if (res.ok) return res
  const body = await res.text().catch(() => '')
  throw new S3ResponseError(text(body, 'Code') ?? `HTTP${res.status}`, res.status, text(body, 'Message') ?? `${method} answered ${res.status}`)
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** The inner XML of each `<name>` element of `xml` (S3's answers are flat enough for this). */
function elements(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((m) => m[1]!)
}

/** The text of the first `<name>` element, XML entities decoded; undefined when absent. */
function text(xml: string, name: string): string | undefined {
  const inner = elements(xml, name)[0]
  return inner === undefined ? undefined : decodeEntities(inner)
}

function decodeEntities(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp|#\d+|#x[0-9a-fA-F]+);/g, (_, e: string) => {
    if (e === 'lt') return '<'
    if (e === 'gt') return '>'
    if (e === 'quot') return '"'
    if (e === 'apos') return "'"
    if (e === 'amp') return '&'
    return String.fromCodePoint(e.startsWith('#x') ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1)))
  })
}
