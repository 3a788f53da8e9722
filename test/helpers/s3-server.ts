import { spawn, type Subprocess } from 'bun'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './binary'

/** Where s3rver 3.7 keeps the parts of uploads not yet completed, in the bucket's folder. */
const UPLOADS = '._S3rver_uploads'

/** The access key s3rver accepts (its built-in account); any other key id is refused. */
export const S3RVER_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

/**
 * The tests' S3-compatible server: s3rver (npm, an independent implementation of the S3 API with
 * multipart uploads), in a child process of its own on a free port of 127.0.0.1, with a temporary
 * folder of its own and one bucket made at start. `kill()` is kill -9 (mid-upload, as a crash or
 * a power cut); `start()` runs it again on the same port and folder, so what was stored survives.
 * s3rver keeps an object at `{dir}/{bucket}/{key}._S3rver_object` and the parts of a multipart
 * upload under `{dir}/{bucket}/._S3rver_uploads/{uploadId}/` until it completes.
 */
export interface S3Server {
  /** `http://127.0.0.1:PORT`, for offsite.endpoint (path style). */
  endpoint: string
  port: number
  bucket: string
  /** The server's storage folder. */
  dir: string
  /** The offsite config of this server for `prefix`, with its credentials. */
  offsite(prefix?: string): { url: string; endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; pathStyle: boolean }
  /** Multipart uploads begun and not completed (the folders s3rver keeps their parts in). */
  pendingUploads(): string[]
  /** Parts stored so far by the multipart uploads not yet completed. */
  pendingParts(): number
  /** The server process's id while it runs (the benchmark reads its CPU time). */
  pid(): number | undefined
  start(): Promise<void>
  /** Stops it with SIGTERM and waits for it to exit. */
  stop(): Promise<void>
  /** kill -9, and waits for it to be gone. */
  kill(): Promise<void>
  /** Stops it and removes its folder. */
  remove(): Promise<void>
}

export async function startS3Server(opts: { bucket?: string; runtime?: string } = {}): Promise<S3Server> {
  const bucket = opts.bucket ?? 'berth-test'
  const dir = mkdtempSync(join(tmpdir(), 'berth-s3rver-'))
  const port = await freePort()
  const main = join(import.meta.dirname, 's3rver-main.cjs')
  let proc: Subprocess | null = null
  let log = ''

  const start = async (): Promise<void> => {
    if (proc && proc.exitCode === null && proc.signalCode === null) return
    log = ''
    const child = spawn([opts.runtime ?? process.execPath, main, String(port), dir, bucket], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    proc = child
    const ready = (async () => {
      const reader = (child.stdout as ReadableStream<Uint8Array>).getReader()
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        log += new TextDecoder().decode(r.value)
        if (log.includes('ready ')) return true
      }
      return false
    })()
    void new Response(child.stderr as ReadableStream<Uint8Array>).text().then((t) => (log += t))
    const ok = await Promise.race([ready, Bun.sleep(15_000).then(() => false)])
    if (!ok) {
      child.kill(9)
      throw new Error(`s3rver did not start on port ${port}: ${log}`)
    }
  }
  const end = async (signal: number): Promise<void> => {
    const child = proc
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    child.kill(signal)
    await child.exited
  }

  await start()
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    bucket,
    dir,
    offsite: (prefix = 'box') => ({ url: `s3://${bucket}/${prefix}`, endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', ...S3RVER_KEY, pathStyle: true }),
    pendingUploads: () => findUploads(join(dir, bucket)),
    pendingParts: () => findUploads(join(dir, bucket)).reduce((n, upload) => n + countParts(upload), 0),
    pid: () => (proc && proc.exitCode === null ? proc.pid : undefined),
    start,
    stop: () => end(15),
    kill: () => end(9),
    remove: async () => {
      await end(9)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function findUploads(bucketDir: string): string[] {
  try {
    return readdirSync(join(bucketDir, UPLOADS)).map((id) => join(bucketDir, UPLOADS, id))
  } catch {
    return []
  }
}

function countParts(uploadDir: string): number {
  try {
    return readdirSync(uploadDir).filter((name) => /^\d+$/.test(name)).length
  } catch {
    return 0
  }
}
