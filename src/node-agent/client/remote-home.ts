import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'
import type { ClusterNode, NodeLink } from '../../drivers/cluster/types'
import type { DiskUsage } from '../../drivers/files/disk-usage'
import type { FileEntry } from '../../drivers/files/entries'
import type { AgentRequest } from '../contract/routes'
import { sendAgent } from './calls'
import { errorOf, keepQuery, MAX_CALL_DATA, MAX_RANGE_BYTES, missingHome, OPEN_TAIL_BYTES, type HomeOp, type WireError } from '../contract/home-wire'
import type { SiteEntry, SiteFileContent, SiteReader } from '../../drivers/files/site-reader'
import type { FileOwner, Home, ReadHandle } from '../../drivers/files/types'

/**
 * A site's home on another node of the cluster, reached through that node's agent (issue 28;
 * the agent's side is server/home-agent.ts, the routes homeCall ... homeUsage of contract/routes.ts,
 * each request built by ./calls.ts).
 * Each operation is one request, which the agent runs with the real SiteHome on the volume's
 * folder; its refusal comes back as the same error class with the same problem and message
 * (home-wire.ts), so the files API, exec, the logs and the edge's access log answer a site on a
 * worker exactly as one on the control plane. Nothing stays open between requests: closing is a
 * no-op, and a node that does not answer throws the link's NodeUnreachableError.
 */

/** The homes routes of the contract (contract/routes.ts). */
export type HomeRoute = 'homeCall' | 'homeFile' | 'homeTar' | 'replaceHome' | 'homeUsage'

/** One home's routes on its node: `send('homeUsage', {})` is that route on the volume's agent, the volume put in. */
export interface HomeEndpoint {
  send<K extends HomeRoute>(route: K, req: Omit<AgentRequest<K>, 'params'>): Promise<Response>
}

/** The endpoint of the volume `volume` on `node`, through `link` (mutual TLS, the node's certificate pinned). */
export function homeEndpoint(link: Pick<NodeLink, 'fetch'>, node: ClusterNode, volume: string): HomeEndpoint {
  return { send: (route, req) => sendAgent(link, node, route, { ...req, params: { volume } } as AgentRequest<typeof route>) }
}

/** Runs `op` on the agent; its result, or the error it threw. */
export async function callHome<T>(endpoint: HomeEndpoint, op: HomeOp, args: unknown[], owner: FileOwner = { uid: 0, gid: 0 }): Promise<T> {
  const res = await endpoint.send('homeCall', { body: { op, args, owner } })
  return ((await answerOf(res)) as { result: T }).result
}

/** The JSON of an agent's answer; throws the error it carries. */
async function answerOf(res: Response): Promise<unknown> {
  const text = await res.text()
  let body: { result?: unknown; error?: WireError } | null = null
  try {
    body = JSON.parse(text)
  } catch {
    // not one of ours (a proxy, or the agent's own router)
  }
  if (body?.error && typeof body.error.kind === 'string') throw errorOf(body.error)
  if (res.status === 404) throw missingHome()
  if (!res.ok || body === null || !('result' in body)) throw new Error(`The node's agent answered ${res.status} to a homes request: ${text.slice(0, 200)}`)
  return body
}

/** Throws the error of a non-JSON route's answer (file, tar) when it is not a success. */
async function checkOk(res: Response): Promise<void> {
  if (res.ok) return
  await answerOf(res)
}

/** A Home on another node; made by openRemoteHome, which checks the home exists as SiteHome.open does. */
export class RemoteHome implements Home {
  constructor(
    private readonly endpoint: HomeEndpoint,
    private readonly owner: FileOwner,
  ) {}

  close(): void {}

  list(path: string, maxEntries: number): Promise<{ path: string; entries: FileEntry[]; truncated: boolean }> {
    return this.call('list', [path, finite(maxEntries)])
  }

  folder(path: string): Promise<string> {
    return this.call('folder', [path])
  }

  read(path: string, maxBytes: number): Promise<FileEntry & { content: string }> {
    return this.call('read', [path, finite(maxBytes)])
  }

  write(path: string, data: Uint8Array): Promise<FileEntry & { created: boolean }> {
    return this.call('write', [path, base64(data)])
  }

  async append(path: string, data: Uint8Array): Promise<void> {
    await this.call('append', [path, base64(data)])
  }

  mkdir(path: string): Promise<FileEntry & { created: boolean }> {
    return this.call('mkdir', [path])
  }

  remove(path: string): Promise<{ path: string; type: 'file' | 'dir'; removed: number }> {
    return this.call('remove', [path])
  }

  rotate(path: string, keep: number): Promise<boolean> {
    return this.call('rotate', [path, keep])
  }

  /**
   * The file at `path`, as SiteHome.openForReading opens it (the same checks, on the node), with
   * its last OPEN_TAIL_BYTES fetched at once: a log's reader (domain/logs/tail.ts) starts at the
   * end, so a tail of a log takes one request. Other reads fetch their range.
   */
  async openForReading(path: string): Promise<ReadHandle> {
    const res = await this.endpoint.send('homeFile', { query: { path }, headers: { range: `bytes=-${OPEN_TAIL_BYTES}` } })
    await checkOk(res)
    const size = Number(res.headers.get('x-file-size'))
    const start = Number(res.headers.get('x-range-start'))
    return new RemoteReadHandle(this.endpoint, path, size, start, new Uint8Array(await res.arrayBuffer()))
  }

  private call<T>(op: HomeOp, args: unknown[]): Promise<T> {
    return callHome<T>(this.endpoint, op, args, this.owner)
  }
}

/** Opens the home at `endpoint`: one request, which fails as SiteHome.open fails (ENOENT when the volume's folder is not there). */
export async function openRemoteHome(endpoint: HomeEndpoint, owner: FileOwner): Promise<RemoteHome> {
  await callHome(endpoint, 'open', [], owner)
  return new RemoteHome(endpoint, owner)
}

/**
 * A file on a node, opened by RemoteHome.openForReading: its size as it was opened, and a window
 * of its bytes (its end); reads outside the window ask the node for their range (the path is
 * resolved again, with the same checks, each time).
 */
export class RemoteReadHandle implements ReadHandle {
  constructor(
    private readonly endpoint: HomeEndpoint,
    private readonly path: string,
    private readonly size: number,
    private readonly windowStart: number,
    private readonly window: Uint8Array,
  ) {}

  async stat(): Promise<{ size: number }> {
    return { size: this.size }
  }

  async read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    const from = position - this.windowStart
    if (from >= 0 && from + length <= this.window.length) {
      buffer.set(this.window.subarray(from, from + length), offset)
      return { bytesRead: length }
    }
    if (length === 0) return { bytesRead: 0 }
    const want = Math.min(length, MAX_RANGE_BYTES)
    const res = await this.endpoint.send('homeFile', { query: { path: this.path }, headers: { range: `bytes=${position}-${position + want - 1}` } })
    await checkOk(res)
    const data = new Uint8Array(await res.arrayBuffer()).subarray(0, want)
    buffer.set(data, offset)
    return { bytesRead: data.length }
  }

  async close(): Promise<void> {}
}

/** A SiteReader (the modules' view of a home) on another node; unusable once its SiteFiles.read settled. */
export class RemoteSiteReader implements SiteReader {
  private closed = false

  constructor(private readonly endpoint: HomeEndpoint) {}

  close(): void {
    this.closed = true
  }

  list(path: string, maxEntries?: number): Promise<SiteEntry[] | null> {
    return this.call('reader.list', [path, finite(maxEntries ?? Number.POSITIVE_INFINITY)])
  }

  stat(path: string): Promise<SiteEntry | null> {
    return this.call('reader.stat', [path])
  }

  async read(path: string, maxBytes: number): Promise<SiteFileContent | null> {
    const read = await this.call<{ data: string; size: number; mtimeMs: number; truncated: boolean } | null>('reader.read', [path, finite(maxBytes)])
    return read && { ...read, data: Buffer.from(read.data, 'base64') }
  }

  private call<T>(op: HomeOp, args: unknown[]): Promise<T> {
    if (this.closed) throw new Error('the site home was read after it was closed')
    return callHome<T>(this.endpoint, op, args)
  }
}

/** tarHome of drivers/archives/home-tar.ts for a home on a node: the agent's tar streamed into `outFile` here. */
export async function remoteTarHome(endpoint: HomeEndpoint, outFile: string, keep: readonly string[] = []): Promise<void> {
  const res = await endpoint.send('homeTar', { query: { keep: keepQuery(keep) } })
  await checkOk(res)
  if (!res.body) throw new Error("The node's agent sent no archive.")
  try {
    await pipeline(res.body as unknown as AsyncIterable<Uint8Array>, createWriteStream(outFile, { highWaterMark: 1 << 20 }))
  } catch (err) {
    await rm(outFile, { force: true })
    throw new Error(`The archive of the home on its node was cut short: ${(err as Error).message}`)
  }
}

/** replaceHome of drivers/archives/home-tar.ts for a home on a node: `tarFile` streamed to the agent, which replaces the home with it. */
export async function remoteReplaceHome(endpoint: HomeEndpoint, tarFile: string, keep: readonly string[] = []): Promise<void> {
  const res = await endpoint.send('replaceHome', { query: { keep: keepQuery(keep) }, body: Bun.file(tarFile) })
  await answerOf(res)
}

/** measureDiskUsage of a home on a node, measured there. */
export async function remoteDiskUsage(endpoint: HomeEndpoint): Promise<DiskUsage> {
  return ((await answerOf(await endpoint.send('homeUsage', {}))) as { result: DiskUsage }).result
}

/** entryExists (drivers/files/entry.ts) at the root of a home on a node. */
export function remoteEntryExists(endpoint: HomeEndpoint, name: string): Promise<boolean> {
  return callHome<boolean>(endpoint, 'exists', [name]).catch(() => false)
}

/** Infinity does not cross JSON: null stands for it. */
function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null
}

function base64(data: Uint8Array): string {
  if (data.length > MAX_CALL_DATA) throw new Error(`A write to a home on another node is at most ${MAX_CALL_DATA} bytes (got ${data.length}).`)
  return Buffer.from(data.buffer, data.byteOffset, data.length).toString('base64')
}
