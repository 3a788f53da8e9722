import { afterAll, describe, expect, it } from 'vitest'
import { S3Destination } from './s3'

/**
 * `sweep` against a stand-in that answers ListMultipartUploads and AbortMultipartUpload as the
 * S3 API reference shows them: s3rver, the tests' real server, has neither call (it answers
 * NotImplemented, covered at the end), and AWS, B2 or MinIO cannot run here.
 */
const HOUR = 60 * 60 * 1000
const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString()
const seen: { method: string; path: string; query: string; authorization: string }[] = []
let notImplemented = false

const upload = (key: string, id: string, initiated: string) =>
  `<Upload><Key>${key}</Key><UploadId>${id}</UploadId><Initiator><ID>x</ID></Initiator><StorageClass>STANDARD</StorageClass><Initiated>${initiated}</Initiated></Upload>`

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const url = new URL(req.url)
    seen.push({ method: req.method, path: url.pathname, query: url.search, authorization: req.headers.get('authorization') ?? '' })
    if (notImplemented) return new Response('<Error><Code>NotImplemented</Code><Message>no</Message></Error>', { status: 501 })
    if (req.method === 'GET' && url.searchParams.has('uploads')) {
      const first = !url.searchParams.get('key-marker')
      const body = first
        ? `<ListMultipartUploadsResult><Bucket>bkt</Bucket><IsTruncated>true</IsTruncated><NextKeyMarker>box/archives/s1/b.age</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>${
          upload('box/archives/s1/a.age', 'u1', iso(2 * HOUR))}${upload('box/archives/s1/b.age', 'u2', iso(60_000))}</ListMultipartUploadsResult>`
        : `<ListMultipartUploadsResult><Bucket>bkt</Bucket><IsTruncated>false</IsTruncated>${
          upload('box/store/x&amp;y', 'u3', iso(3 * HOUR))}${upload('box/store/s.db.zst.age', 'u4', iso(5 * HOUR))}</ListMultipartUploadsResult>`
      return new Response(body, { headers: { 'content-type': 'application/xml' } })
    }
    if (req.method === 'DELETE' && url.searchParams.has('uploadId')) {
      return url.searchParams.get('uploadId') === 'u4'
        ? new Response('<Error><Code>NoSuchUpload</Code></Error>', { status: 404 })
        : new Response(null, { status: 204 })
    }
    return new Response('<Error><Code>InvalidRequest</Code></Error>', { status: 400 })
  },
})
afterAll(() => server.stop(true))

const destination = () => new S3Destination({
  url: 's3://bkt/box', endpoint: `http://127.0.0.1:${server.port}`, region: 'eu-central-1', accessKeyId: 'AKIDBERTH', secretAccessKey: 'secret', pathStyle: true,
}, { retry: { attempts: 1, firstDelayMs: 0 }, requestTimeoutMs: 2000 })

describe('S3Destination.sweep', () => {
  it('aborts the incomplete uploads under its prefix older than an hour, every page, signed', async () => {
    seen.length = 0
    await destination().sweep()
    const lists = seen.filter((r) => r.method === 'GET')
    expect(lists.map((r) => new URLSearchParams(r.query).get('key-marker'))).toEqual([null, 'box/archives/s1/b.age'])
    expect(lists.every((r) => r.path === '/bkt/' && new URLSearchParams(r.query).get('prefix') === 'box/')).toBe(true)
    // u1 is two hours old; u2 is a minute old; u3's key is none Berth writes; u4 is already gone.
    expect(seen.filter((r) => r.method === 'DELETE').map((r) => `${r.path}${r.query}`)).toEqual([
      '/bkt/box/archives/s1/a.age?uploadId=u1',
      '/bkt/box/store/s.db.zst.age?uploadId=u4',
    ])
    expect(seen.every((r) => r.authorization.startsWith('AWS4-HMAC-SHA256 Credential=AKIDBERTH/') && r.authorization.includes('/eu-central-1/s3/aws4_request'))).toBe(true)
  })

  it('never throws: a server without the call (s3rver) or no server at all', async () => {
    notImplemented = true
    try {
      await expect(destination().sweep()).resolves.toBeUndefined()
    } finally {
      notImplemented = false
    }
    const none = new S3Destination({ url: 's3://bkt/box', endpoint: 'http://127.0.0.1:1', region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b', pathStyle: true }, { retry: { attempts: 1, firstDelayMs: 0 } })
    await expect(none.sweep()).resolves.toBeUndefined()
  })
})
