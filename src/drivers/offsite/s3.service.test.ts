import { spawnSync } from 'bun'
import { createServer, type Server } from 'node:net'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateIdentity, identityToRecipient } from 'age-encryption'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../../test/helpers/binary'
import { startS3Server, S3RVER_KEY, type S3Server } from '../../../test/helpers/s3-server'
import { seal } from './age'
import { S3Destination, type S3Tuning } from './s3'
import { InvalidOffsiteKeyError, OffsiteMissingError, OffsiteUnavailableError } from './types'

/**
 * The S3 destination against s3rver (test/helpers/s3-server.ts), a real S3 server in a process
 * of its own: round trips, multipart, memory, the failures a hoster meets (wrong key, no bucket,
 * no server, a server killed in the middle of an upload) and a copy opened by hand with age.
 */

const MiB = 1024 * 1024
/** Quick back-off so the failure tests answer in a second or two. */
const QUICK: Partial<S3Tuning> = { retry: { attempts: 3, firstDelayMs: 50 }, requestTimeoutMs: 2000, stallTimeoutMs: 3000 }

let s3: S3Server
const work = mkdtempSync(join(tmpdir(), 'berth-s3-test-'))
beforeAll(async () => {
  s3 = await startS3Server()
})
afterAll(async () => {
  await s3?.remove()
  rmSync(work, { recursive: true, force: true })
})

const destination = (prefix = 'box', tuning: Partial<S3Tuning> = QUICK) => new S3Destination(s3.offsite(prefix), tuning)
/** The bucket as a plain S3 client sees it: every key, prefix included. */
const bucketKeys = async () => ((await new Bun.S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', ...S3RVER_KEY }).list({})).contents ?? []).map((o) => o.key)
const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** `mib` MiB of random bytes, given `chunk` bytes at a time, `pauseMs` between chunks. */
function generated(mib: number, { chunk = MiB, pauseMs = 0 } = {}): { stream: ReadableStream<Uint8Array>; sha256: () => string; sent: () => number } {
  const hash = new Bun.CryptoHasher('sha256')
  let sent = 0
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (sent >= mib * MiB) return c.close()
      if (pauseMs) await Bun.sleep(pauseMs)
      const bytes = new Uint8Array(chunk)
      crypto.getRandomValues(bytes.subarray(0, Math.min(chunk, 65536)))
      bytes[chunk - 1] = sent & 0xff
      hash.update(bytes)
      sent += chunk
      c.enqueue(bytes)
    },
  }, { highWaterMark: 0 })
  return { stream, sha256: () => hash.digest('hex'), sent: () => sent }
}

async function failureOf(work: Promise<unknown>): Promise<OffsiteUnavailableError> {
  const err = await work.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(OffsiteUnavailableError)
  return err as OffsiteUnavailableError
}

describe('S3Destination on s3rver', () => {
  it('puts, lists, gets and deletes under its prefix; another prefix sees none of it', async () => {
    const box = destination('hosts/box-1')
    expect(box.describe).toBe(`s3://${s3.bucket}/hosts/box-1`)
    expect(await box.put('archives/site-1/a.tar.zst.age', new Response('first').body!)).toEqual({ sizeBytes: 5 })
    await box.put('store/20260101T000000Z-ab.db.zst.age', new Response('store copy').body!)
    await box.put('archives/site-1/a.tar.zst.age', new Response('second!').body!)
    expect(await bucketKeys()).toEqual(expect.arrayContaining(['hosts/box-1/archives/site-1/a.tar.zst.age', 'hosts/box-1/store/20260101T000000Z-ab.db.zst.age']))

    const listed = await box.list('archives/')
    expect(listed).toEqual([{ key: 'archives/site-1/a.tar.zst.age', sizeBytes: 7, modifiedAt: expect.any(Number) }])
    expect(Math.abs(listed[0]!.modifiedAt - Date.now())).toBeLessThan(60_000)
    expect((await box.list('')).map((o) => o.key).sort()).toEqual(['archives/site-1/a.tar.zst.age', 'store/20260101T000000Z-ab.db.zst.age'])
    expect(await destination('hosts/box-2').list('')).toEqual([])
    expect(await new Response(await box.get('archives/site-1/a.tar.zst.age')).text()).toBe('second!')

    await box.delete('archives/site-1/a.tar.zst.age')
    await box.delete('archives/site-1/a.tar.zst.age')
    expect(await box.list('archives/')).toEqual([])
    await expect(box.get('archives/site-1/a.tar.zst.age')).rejects.toBeInstanceOf(OffsiteMissingError)
    await expect(box.put('../escape', new Response('x').body!)).rejects.toBeInstanceOf(InvalidOffsiteKeyError)
    await expect(box.list('a//')).rejects.toBeInstanceOf(InvalidOffsiteKeyError)
    await box.probe()
    expect(await box.list('probe/')).toEqual([])
    expect(await box.put('tls/empty.tar.age', new Response('').body!)).toEqual({ sizeBytes: 0 })
    expect(await new Response(await box.get('tls/empty.tar.age')).text()).toBe('')
  })

  it('a 42 MiB body goes up in 5 MiB parts, is invisible until complete, and comes back byte for byte', async () => {
    const box = destination('multipart')
    const body = generated(42, { chunk: 256 * 1024, pauseMs: 2 })
    let parts = 0
    let listedEarly = false
    const watching = setInterval(() => (parts = Math.max(parts, s3.pendingParts())), 5)
    const put = box.put('archives/big/one.tar.zst.age', body.stream)
    while (body.sent() < 30 * MiB) await Bun.sleep(20)
    listedEarly = (await box.list('archives/big/')).length > 0 || (await box.get('archives/big/one.tar.zst.age').then(() => true, () => false))
    expect(await put).toEqual({ sizeBytes: 42 * MiB })
    clearInterval(watching)
    expect(listedEarly).toBe(false)
    // s3rver keeps each part in the upload's folder until the upload completes: at least 6 of
    // the 9 parts were seen there (the first ones, while the last were still being read).
    expect(parts).toBeGreaterThanOrEqual(6)
    expect(s3.pendingUploads()).toEqual([])
    const back = new Uint8Array(await new Response(await box.get('archives/big/one.tar.zst.age')).arrayBuffer())
    expect(back.byteLength).toBe(42 * MiB)
    expect(sha256(back)).toBe(body.sha256())
  })

  it('puts a 512 MiB stream with memory bounded far below its size (a process of its own)', () => {
    const job = { settings: s3.offsite('memory'), key: 'archives/mem/big.age', syntheticMiB: 512 }
    const run = spawnSync([process.execPath, join(import.meta.dirname, '../../../test/helpers/offsite-put.ts')], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', OFFSITE_PUT: JSON.stringify(job) },
    })
    expect(run.stderr.toString()).toBe('')
    const r = JSON.parse(run.stdout.toString()) as { idleRss: number; peakRss: number; sizeBytes: number }
    expect(r.sizeBytes).toBe(512 * MiB)
    // Measured about 60 MiB over idle with 5 MiB parts, two at a time (docs/benchmarks.md).
    expect((r.peakRss - r.idleRss) / MiB).toBeLessThan(100)
  }, 120_000)

  it('wrong credentials fail as credentials, with advice and never the secret', async () => {
    const secret = 'not-the-secret-0123456789'
    const wrong = new S3Destination({ ...s3.offsite('creds'), accessKeyId: 'NOT-A-KEY', secretAccessKey: secret }, QUICK)
    for (const attempt of [() => wrong.put('a/b', new Response('x').body!), () => wrong.list(''), () => wrong.get('a/b'), () => wrong.delete('a/b'), () => wrong.probe()]) {
      const err = await failureOf(attempt())
      expect(err.kind).toBe('credentials')
      expect(err.message).toContain('offsite.access_key_id')
      expect(err.message).not.toContain(secret)
    }
  })

  it('a missing bucket fails as bucket, naming it', async () => {
    const missing = new S3Destination({ ...s3.offsite('x'), url: 's3://no-such-bucket/x' }, QUICK)
    for (const attempt of [() => missing.put('a/b', new Response('x').body!), () => missing.list(''), () => missing.get('a/b'), () => missing.probe()]) {
      const err = await failureOf(attempt())
      expect(err.kind).toBe('bucket')
      expect(err.message).toContain('s3://no-such-bucket/x')
      expect(err.message).toContain('does not exist')
    }
  })

  it('no server on the port fails as unreachable, after retries, within seconds', async () => {
    const port = await freePort()
    const none = new S3Destination({ ...s3.offsite('x'), endpoint: `http://127.0.0.1:${port}` }, QUICK)
    const started = Date.now()
    for (const attempt of [() => none.put('a/b', new Response('x').body!), () => none.list(''), () => none.get('a/b'), () => none.put('big/one', generated(12).stream)]) {
      const err = await failureOf(attempt())
      expect(err.kind).toBe('unreachable')
      expect(err.message).toContain(`127.0.0.1:${port}`)
    }
    expect(Date.now() - started).toBeLessThan(10_000)
    await none.sweep()
  })

  it('a server that accepts and never answers fails as unreachable at the deadline', async () => {
    const silent: Server = createServer(() => {}).listen(0, '127.0.0.1')
    await new Promise((r) => silent.once('listening', r))
    try {
      const port = (silent.address() as { port: number }).port
      const hung = new S3Destination({ ...s3.offsite('x'), endpoint: `http://127.0.0.1:${port}` }, { retry: { attempts: 1, firstDelayMs: 0 }, requestTimeoutMs: 500, stallTimeoutMs: 1000 })
      const started = Date.now()
      // The whole failure is compared so that a wrong kind shows its message.
      const kindOf = async (op: Promise<unknown>) => {
        const { kind, message } = await failureOf(op)
        return { kind, message }
      }
      expect(await kindOf(hung.list(''))).toMatchObject({ kind: 'unreachable' })
      expect(await kindOf(hung.put('a/b', new Response('x').body!))).toMatchObject({ kind: 'unreachable' })
      expect(await kindOf(hung.put('big/one', generated(12).stream))).toMatchObject({ kind: 'unreachable' })
      expect(Date.now() - started).toBeLessThan(8000)
    } finally {
      silent.close()
    }
  })

  it('rides over transient failures: every third request answered 503 SlowDown still copies, lists, gets and deletes', async () => {
    let n = 0
    let refused = 0
    const flaky = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const url = new URL(req.url)
        if (++n % 3 === 0) {
          refused++
          await req.arrayBuffer()
          return new Response('<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>', { status: 503 })
        }
        return fetch(`${s3.endpoint}${url.pathname}${url.search}`, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual' })
      },
    })
    try {
      const box = new S3Destination({ ...s3.offsite('flaky'), endpoint: `http://127.0.0.1:${flaky.port}` }, QUICK)
      const big = generated(16)
      expect(await box.put('archives/s/big.age', big.stream)).toEqual({ sizeBytes: 16 * MiB })
      await box.put('store/small.age', new Response('small').body!)
      expect((await box.list('')).map((o) => o.key).sort()).toEqual(['archives/s/big.age', 'store/small.age'])
      expect(sha256(new Uint8Array(await new Response(await box.get('archives/s/big.age')).arrayBuffer()))).toBe(big.sha256())
      await box.delete('store/small.age')
      expect(refused).toBeGreaterThanOrEqual(3)
    } finally {
      flaky.stop(true)
    }
  })

  it('a body that fails in the middle of a multipart upload leaves nothing listed', async () => {
    const box = destination('broken')
    let n = 0
    const failing = new ReadableStream<Uint8Array>({
      pull(c) {
        if (++n > 12) return c.error(new Error('disk read failed'))
        c.enqueue(new Uint8Array(MiB))
      },
    })
    const err = await failureOf(box.put('archives/x/one.age', failing))
    expect(err.message).toContain('disk read failed')
    expect(await box.list('')).toEqual([])
    await expect(box.get('archives/x/one.age')).rejects.toBeInstanceOf(OffsiteMissingError)
  })

  it('kill -9 of the server in the middle of a multipart upload: the put fails, nothing is listed, and the copy completes once it is back', async () => {
    const box = destination('killed')
    const key = 'archives/site-9/a1.tar.zst.age'
    const body = generated(60, { chunk: 256 * 1024, pauseMs: 3 })
    const put = box.put(key, body.stream)
    while (s3.pendingParts() < 2) await Bun.sleep(10)
    await s3.kill()
    const err = await failureOf(put)
    expect({ kind: err.kind, message: err.message }).toMatchObject({ kind: 'unreachable' })
    await s3.start()
    expect(await box.list('')).toEqual([])
    await expect(box.get(key)).rejects.toBeInstanceOf(OffsiteMissingError)
    expect(s3.pendingUploads().length).toBeGreaterThan(0)

    const again = generated(60, { chunk: MiB })
    expect(await box.put(key, again.stream)).toEqual({ sizeBytes: 60 * MiB })
    await box.sweep()
    expect((await box.list('')).map((o) => o.key)).toEqual([key])
    expect(sha256(new Uint8Array(await new Response(await box.get(key)).arrayBuffer()))).toBe(again.sha256())
  }, 60_000)

  it('a sealed copy fetched by hand (a presigned URL and curl) opens with Debian age and untars', async () => {
    const identity = await generateIdentity()
    const recipient = await identityToRecipient(identity)
    const site = join(work, 'site')
    mkdirSync(join(site, 'public'), { recursive: true })
    writeFileSync(join(site, 'public', 'index.html'), '<h1>still here</h1>\n')
    writeFileSync(join(site, 'data.bin'), crypto.getRandomValues(new Uint8Array(65536)))
    const tar = join(work, 'site.tar')
    expect(spawnSync(['tar', '-C', site, '-cf', tar, '.']).exitCode).toBe(0)

    const box = destination('sealed')
    const sealed = await seal(Bun.file(tar).stream(), [recipient])
    await box.put('archives/site-1/a.tar.age', sealed.stream)
    expect((await sealed.plain).sha256).toBe(sha256(readFileSync(tar)))

    const url = new Bun.S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', ...S3RVER_KEY }).presign('sealed/archives/site-1/a.tar.age', { expiresIn: 300 })
    const downloaded = join(work, 'download.age')
    expect(spawnSync(['curl', '-sfo', downloaded, url]).exitCode).toBe(0)
    writeFileSync(join(work, 'id.txt'), `${identity}\n`)
    const opened = spawnSync(['age', '-d', '-i', join(work, 'id.txt'), '-o', join(work, 'out.tar'), downloaded])
    expect(opened.stderr.toString()).toBe('')
    const out = join(work, 'out')
    mkdirSync(out)
    expect(spawnSync(['tar', '-C', out, '-xf', join(work, 'out.tar')]).exitCode).toBe(0)
    expect(readFileSync(join(out, 'public', 'index.html'), 'utf8')).toBe('<h1>still here</h1>\n')
    expect(readFileSync(join(out, 'data.bin'))).toEqual(readFileSync(join(site, 'data.bin')))
  })
})
