import { createWriteStream } from 'node:fs'
import { lstat, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { replaceHome, tarHomeCommand } from '../../drivers/archives/home-tar'
import { measureDiskUsage } from '../../drivers/files/disk-usage'
import { SiteHome } from '../../drivers/files/home'
import { checkedName, keepOf, MAX_CALL_DATA, MAX_RANGE_BYTES, missingHome, wireError, type HomeCall, type HomeOp } from '../contract/home-wire'
import { HomeReader } from '../../drivers/files/site-reader'
import type { FileOwner } from '../../drivers/files/types'
import type { AgentHandlers } from './router'

/**
 * The agent's side of a site's home on its node (issue 28; the routes homeCall, homeFile,
 * homeTar, replaceHome and homeUsage of contract/routes.ts): the real SiteHome, tar and disk
 * usage on the volume's folder, for the control plane's RemoteHome (client/remote-home.ts). The
 * agent's server checks the caller (mutual TLS, the control plane's certificate) and the request
 * (the contract); `folderOf` resolves `{volume}` to its mount point (a volume of this instance,
 * by its label; any other answers as a missing folder, missingHomeResponse()).
 *
 * Every path is resolved by SiteHome beneath the folder as on the control plane's own box, so
 * the same path gets the same answer or the same error (contract/home-wire.ts carries it across).
 */

/** The folder of a volume on this node, or null when it is not one of this instance's site volumes. */
export type HomeFolders = (volume: string) => Promise<string | null>

/**
 * The request body the agent's server must accept (its Bun.serve's `maxRequestBodySize`, which
 * is 128 MiB by default and refuses a bigger `PUT tar` with a broken pipe): an upload carries a
 * whole home, streamed to disk, never held in memory (320 MB went through with under 100 MB of
 * RSS here). Calls bound their own bodies (MAX_CALL_BYTES, in the contract).
 */
export const HOMES_MAX_REQUEST_BODY = Number.MAX_SAFE_INTEGER

/** The answer for a volume that is not this instance's (or does not exist): the control plane reads it as a missing folder. */
export function missingHomeResponse(): Response {
  return errorResponse(missingHome())
}

export interface HomeAgentOptions {
  /**
   * Where an uploaded tar waits before it replaces the home: a folder on a disk, never tmpfs
   * (an archive is as big as the site). Default: the folder that holds the home (for a Docker
   * volume, the volume's own root-only folder next to `_data`).
   */
  workDir?: string
}

type HomeRoutes = Pick<AgentHandlers, 'homeCall' | 'homeFile' | 'homeTar' | 'replaceHome' | 'homeUsage'>

/** The homes routes' handlers over the volumes `folderOf` finds. */
export function homeHandlers(folderOf: HomeFolders, options: HomeAgentOptions = {}): HomeRoutes {
  const on = async (volume: string, work: (hostPath: string) => Promise<Response>): Promise<Response> => {
    try {
      const hostPath = await folderOf(volume)
      return hostPath ? await work(hostPath) : missingHomeResponse()
    } catch (err) {
      return errorResponse(err)
    }
  }
  return {
    homeCall: async ({ params, body }) => on(params.volume, async (hostPath) => json({ result: await callOf(hostPath, body) })),
    homeFile: async ({ params, query, headers }) => on(params.volume, (hostPath) => fileOf(hostPath, query.path, headers.range ?? null)),
    homeTar: async ({ params, query }) => on(params.volume, (hostPath) => tarOf(hostPath, keepOf(query.keep ?? null))),
    replaceHome: async ({ params, query, request }) => on(params.volume, async (hostPath) => {
      await replaceWith(request, hostPath, keepOf(query.keep ?? null), options.workDir ?? dirname(hostPath))
      return json({ result: null })
    }),
    homeUsage: async ({ params }) => on(params.volume, async (hostPath) => json({ result: await measureDiskUsage(hostPath) })),
  }
}

/** Every homes route answering 501: an agent that serves no homes (tests of its other routes). */
export function noHomes(): HomeRoutes {
  const none = async () => Response.json({ error: { code: 'not_implemented', message: 'This agent serves no homes.' } }, { status: 501 })
  return { homeCall: none, homeFile: none, homeTar: none, replaceHome: none, homeUsage: none }
}

/** Runs one operation of SiteHome (or SiteReader) on the home at `hostPath`, opened for it alone. */
async function callOf(hostPath: string, call: HomeCall): Promise<unknown> {
  const { op, args } = call
  const str = (i: number) => argOf(args, i, 'string') as string
  const num = (i: number) => (args[i] === null ? Number.POSITIVE_INFINITY : (argOf(args, i, 'number') as number))
  const bytes = (i: number) => {
    const data = Buffer.from(str(i), 'base64')
    if (data.length > MAX_CALL_DATA) throw badRequest(`${op} sends at most ${MAX_CALL_DATA} bytes`)
    return data
  }
  if (op.startsWith('reader.')) {
    const reader = HomeReader.open(hostPath)
    try {
      if (op === 'reader.list') return await reader.list(str(0), num(1))
      if (op === 'reader.stat') return reader.stat(str(0))
      if (op === 'reader.read') {
        const read = await reader.read(str(0), Math.min(num(1), MAX_RANGE_BYTES))
        return read && { data: read.data.toString('base64'), size: read.size, mtimeMs: read.mtimeMs, truncated: read.truncated }
      }
    } finally {
      reader.close()
    }
    throw badRequest(`unknown op ${op}`)
  }
  if (op === 'exists') {
    const name = checkedName(str(0))
    return lstat(join(hostPath, name)).then(() => true, () => false)
  }
  const home = SiteHome.open(hostPath, ownerOf(call.owner))
  try {
    switch (op as HomeOp) {
      case 'open':
        return null
      case 'list':
        return home.list(str(0), num(1))
      case 'folder':
        return home.folder(str(0))
      case 'read':
        return home.read(str(0), num(1))
      case 'write':
        return home.write(str(0), bytes(1))
      case 'append':
        home.append(str(0), bytes(1))
        return null
      case 'mkdir':
        return home.mkdir(str(0))
      case 'remove':
        return await home.remove(str(0))
      case 'rotate':
        return home.rotate(str(0), argOf(args, 1, 'number') as number)
    }
    throw badRequest(`unknown op ${op}`)
  } finally {
    home.close()
  }
}

/**
 * `GET file?path=P`: the regular file at P, opened as SiteHome.openForReading opens it. With
 * `range: bytes=A-B` (or `bytes=-N`, its last N bytes) the bytes asked for (at most
 * MAX_RANGE_BYTES; fewer past the end), 206; without, the whole file streamed, 200. Both say the
 * file's size (`x-file-size`) and where the bytes start (`x-range-start`).
 */
async function fileOf(hostPath: string, path: string, range: string | null): Promise<Response> {
  const home = SiteHome.open(hostPath, { uid: 0, gid: 0 })
  let file: Awaited<ReturnType<SiteHome['openForReading']>>
  try {
    file = await home.openForReading(path)
  } finally {
    home.close()
  }
  try {
    const size = (await file.stat()).size
    if (range !== null) {
      const { start, length } = rangeOf(range, size)
      const data = Buffer.allocUnsafe(length)
      let done = 0
      while (done < length) {
        const { bytesRead } = await file.read(data, done, length - done, start + done)
        if (bytesRead === 0) break
        done += bytesRead
      }
      await file.close()
      return new Response(data.subarray(0, done), { status: 206, headers: { 'content-type': 'application/octet-stream', 'x-file-size': String(size), 'x-range-start': String(start) } })
    }
    let sent = 0
    const body = new ReadableStream({
      type: 'bytes',
      async pull(controller) {
        const chunk = Buffer.allocUnsafe(Math.min(1 << 20, size - sent))
        const { bytesRead } = chunk.length === 0 ? { bytesRead: 0 } : await file.read(chunk, 0, chunk.length, sent)
        sent += bytesRead
        if (bytesRead > 0) controller.enqueue(chunk.subarray(0, bytesRead))
        if (sent >= size || bytesRead === 0) {
          await file.close()
          if (sent < size) controller.error(new Error('the file shrank while it was sent'))
          else controller.close()
        }
      },
      async cancel() {
        await file.close()
      },
    })
    return new Response(body, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(size), 'x-file-size': String(size), 'x-range-start': '0' } })
  } catch (err) {
    await file.close().catch(() => {})
    throw err
  }
}

/** `bytes=A-B` or `bytes=-N` of a file of `size` bytes, within it and MAX_RANGE_BYTES. */
function rangeOf(header: string, size: number): { start: number; length: number } {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!match || (match[1] === '' && match[2] === '')) throw badRequest(`range '${header}' is not bytes=A-B or bytes=-N`)
  let start: number
  let end: number
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]))
    end = size
  } else {
    start = Math.min(Number(match[1]), size)
    end = match[2] === '' ? size : Math.min(Number(match[2]) + 1, size)
  }
  return { start, length: Math.max(0, Math.min(end - start, MAX_RANGE_BYTES)) }
}

/**
 * `GET tar`: tarHome's archive, streamed from GNU tar's stdout as it writes it (no copy on the
 * node, none in memory). Should tar fail part-way, the body is cut short (the stream errors, the
 * connection ends without its last chunk) and the control plane's read fails, so a broken
 * archive is never taken for a whole one; a failure before any byte is an error answer.
 */
async function tarOf(hostPath: string, keep: string[]): Promise<Response> {
  const proc = Bun.spawn(tarHomeCommand(hostPath, '-', keep), { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const stderr = new Response(proc.stderr).text()
  const failure = async (code: number) => {
    const tail = (await stderr).trim().split('\n').slice(-3).join('; ')
    return new Error(`tar --create failed (exit ${code}): ${tail || 'no message'}`)
  }
  const reader = proc.stdout.getReader()
  const first = await reader.read()
  if (first.done) {
    const code = await proc.exited
    if (code !== 0) throw await failure(code)
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (!first.done) controller.enqueue(first.value)
    },
    async pull(controller) {
      const next = first.done ? { done: true as const, value: undefined } : await reader.read()
      if (!next.done) {
        controller.enqueue(next.value)
        return
      }
      const code = await proc.exited
      if (code === 0) controller.close()
      else controller.error(await failure(code))
    },
    cancel() {
      proc.kill()
    },
  })
  return new Response(body, { headers: { 'content-type': 'application/x-tar' } })
}

/** `PUT tar`: the body written to a file in `workDir` (streamed, never held in memory), then replaceHome. */
async function replaceWith(req: Request, hostPath: string, keep: string[], workDir: string): Promise<void> {
  if (!req.body) throw badRequest('PUT tar needs the archive as its body')
  const file = join(workDir, `.berth-home-${crypto.randomUUID()}.tar`)
  try {
    await pipeline(req.body as unknown as AsyncIterable<Uint8Array>, createWriteStream(file, { mode: 0o600, flags: 'wx', highWaterMark: 1 << 20 }))
    const expected = req.headers.get('content-length')
    const written = (await lstat(file)).size
    if (expected !== null && Number(expected) !== written) throw new Error(`the archive arrived cut short (${written} of ${expected} bytes)`)
    await replaceHome(hostPath, file, keep)
  } finally {
    await rm(file, { force: true })
  }
}

function ownerOf(owner: unknown): FileOwner {
  const o = owner as FileOwner | null
  if (!o || !Number.isSafeInteger(o.uid) || !Number.isSafeInteger(o.gid) || o.uid < 0 || o.gid < 0) throw badRequest('owner is { uid, gid }')
  return { uid: o.uid, gid: o.gid }
}

function argOf(args: unknown[], i: number, type: 'string' | 'number'): unknown {
  if (typeof args[i] !== type) throw badRequest(`argument ${i} is not a ${type}`)
  return args[i]
}

/** A request the control plane should never send (a bug there): 400, `bad_request`. */
class BadRequest extends Error {}
const badRequest = (message: string) => new BadRequest(message)

function errorResponse(err: unknown): Response {
  if (err instanceof BadRequest) return json({ error: { kind: 'error', code: 'bad_request', message: err.message } }, 400)
  const { status, error } = wireError(err)
  return json({ error }, status)
}

function json(body: unknown, status = 200): Response {
  return Response.json(body, { status })
}
