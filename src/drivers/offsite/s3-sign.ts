import { createHash, createHmac } from 'node:crypto'

/**
 * AWS Signature Version 4 for S3 requests, with the signature in the Authorization header
 * (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html). Every S3-compatible
 * service (AWS, Backblaze B2, Wasabi, Hetzner, MinIO, Garage) takes it; the test of this file
 * holds it to AWS's published example signatures, since s3rver (the tests' server) checks the
 * key id but not the signature.
 */

export interface S3Credentials {
  accessKeyId: string
  secretAccessKey: string
  region: string
}

/** The SHA-256 of an empty body, as S3 wants it in x-amz-content-sha256. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'

/**
 * The headers to send with a request to `url` (host, x-amz-date, x-amz-content-sha256,
 * authorization, and `headers` as given). `payloadSha256` is the hex SHA-256 of the body.
 * The URL's path must already be percent-encoded as it goes on the wire (encodeKeyPath).
 */
export function signRequest(input: {
  method: string
  url: URL
  headers?: Record<string, string>
  payloadSha256: string
  credentials: S3Credentials
  now?: Date
}): Record<string, string> {
  const { method, url, payloadSha256, credentials } = input
  const amzDate = (input.now ?? new Date()).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = amzDate.slice(0, 8)
  const headers: Record<string, string> = {
    ...lowerKeys(input.headers ?? {}),
    host: url.host,
    'x-amz-date': amzDate,
    'x-amz-content-sha256': payloadSha256,
  }
  const names = Object.keys(headers).sort()
  const canonical = [
    method,
    url.pathname,
    canonicalQuery(url.searchParams),
    ...names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}`),
    '',
    names.join(';'),
    payloadSha256,
  ].join('\n')
  const scope = `${day}/${credentials.region}/s3/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n')
  let key: Buffer = hmac(`AWS4${credentials.secretAccessKey}`, day)
  for (const part of [credentials.region, 's3', 'aws4_request']) key = hmac(key, part)
  const signature = createHmac('sha256', key).update(toSign).digest('hex')
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope},SignedHeaders=${names.join(';')},Signature=${signature}`
  return headers
}

/** A key's path as it goes on the wire and in the signature: each segment per RFC 3986, `/` kept. */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(encodeRfc3986).join('/')
}

/** Query parameters sorted by name, each name and value percent-encoded (RFC 3986), `k=` when empty. */
function canonicalQuery(params: URLSearchParams): string {
  return [...params.entries()]
    .map(([k, v]) => [encodeRfc3986(k), encodeRfc3986(v)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&')
}

function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

function sha256Hex(data: string): string {
  return createHash('sha256').update(data).digest('hex')
}
