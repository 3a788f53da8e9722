import type { Logger } from '../../lib/logger'
import { openEngine, type EngineAddress } from './engine'
import { EngineLink } from './engine-link'
import { LABEL } from './site-container'
import type { SiteEvent, SiteEventAction, SiteWatch, SiteWatchHandlers } from './types'

/** The label of containers that are not a site's own (drivers/runtime/site-disks' DISKS_ROLE, drivers/databases' DB_LABEL.role). */
const ROLE_LABEL = 'dev.berth.role'
/** A site's database container (drivers/databases' DB_ROLE and DB_LABEL.name): reported to onDatabaseEvent. */
const DATABASE_ROLE = 'database'
const DATABASE_LABEL = 'dev.berth.database'

const ACTIONS: readonly SiteEventAction[] = ['start', 'die', 'stop', 'kill', 'oom', 'destroy']

/** How the watcher paces itself; the defaults suit a local engine. */
export interface WatchTiming {
  /** Between two liveness checks of a followed engine. */
  checkEveryMs: number
  /** A liveness check (or the opening of the stream) unanswered this long counts as a drop. */
  answerWithinMs: number
  /** Reconnect delays after a drop: the first, doubling up to the last. */
  firstRetryMs: number
  maxRetryMs: number
}

/**
 * A restarted engine is followed again within about a second of answering: the retries stop
 * doubling at 1 s (a refused connect on a Unix socket costs nothing). A dead stream is noticed
 * within 2 s plus 3 s at worst, and at once when the connection's close reaches Berth.
 */
export const WATCH_TIMING: WatchTiming = { checkEveryMs: 2_000, answerWithinMs: 3_000, firstRetryMs: 250, maxRetryMs: 1_000 }

/** A stream that stayed up this long resets the back-off. */
const STABLE_MS = 30_000

/** One followed stream and the link that vouches for it. */
interface Connection {
  stream: NodeJS.ReadableStream
  link: EngineLink
  /** The next liveness check. */
  next?: ReturnType<typeof setTimeout>
  openedAt: number
  dropped: boolean
}

/**
 * Follows the engine's event stream (GET /events) for this instance's site containers and
 * reports each start, death, stop, kill, OOM and removal at once.
 *
 * A stream can die without its end, close or error ever reaching Berth (issue 22: after an
 * engine restart, nothing came), so the stream is not trusted to say so: beside it, an
 * EngineLink (one kept-open connection, opened first) is asked every `checkEveryMs`. The
 * engine failing to answer there, or the link closing, means it stopped or restarted since
 * the stream opened: the stream counts as dropped either way. After a drop, or when the engine
 * cannot be reached, it reconnects with back-off and, once following again, calls
 * `onReconnect`: events of the gap are lost, so the caller compares everything then.
 * `onReachable` hears whether the engine answers, each time that changes.
 */
export function watchSiteEvents(
  opts: { socketPath: EngineAddress; instanceId: string; log: Logger; timing?: WatchTiming },
  handlers: SiteWatchHandlers,
): SiteWatch {
  const timing = opts.timing ?? WATCH_TIMING
  let closed = false
  let current: Connection | null = null
  let retryMs = timing.firstRetryMs
  let timer: ReturnType<typeof setTimeout> | undefined
  let followedBefore = false
  let failuresInARow = 0
  let reachable: boolean | null = null

  const setReachable = (now: boolean) => {
    if (reachable === now) return
    reachable = now
    handlers.onReachable?.(now)
  }

  const schedule = () => {
    if (closed) return
    timer = setTimeout(connect, retryMs)
    timer.unref?.()
    retryMs = Math.min(timing.maxRetryMs, retryMs * 2)
  }

  const connect = async () => {
    if (closed) return
    const link = new EngineLink(opts.socketPath, timing.answerWithinMs)
    let stream: NodeJS.ReadableStream
    try {
      // The link first: any restart after this point closes it, so a stream opened on an
      // engine that then restarted is caught by the next check.
      await link.check()
      stream = await openStream()
    } catch (err) {
      link.close()
      if (closed) return
      setReachable(false)
      if (failuresInARow++ === 0) opts.log.warn(followedBefore ? 'cannot follow the engine events again yet; retrying' : 'cannot follow the engine events yet; retrying', { error: (err as Error).message })
      // The first successful connection after failures counts as a reconnect too.
      followedBefore = true
      return schedule()
    }
    if (closed) {
      link.close()
      return destroy(stream)
    }
    failuresInARow = 0
    const conn: Connection = { stream, link, openedAt: Date.now(), dropped: false }
    current = conn
    setReachable(true)
    follow(conn)
    checkLater(conn)
    if (followedBefore) {
      opts.log.info('following the engine events again')
      handlers.onReconnect()
    }
    followedBefore = true
  }

  /** Opens GET /events, giving up (and aborting it) when its head does not come in time. */
  const openStream = async (): Promise<NodeJS.ReadableStream> => {
    const docker = await openEngine(opts.socketPath, 0)
    const abort = new AbortController()
    const late = setTimeout(() => abort.abort(new Error(`the engine did not open its event stream within ${timing.answerWithinMs} ms`)), timing.answerWithinMs)
    try {
      return await docker.getEvents({
        filters: { type: ['container'], label: [`${LABEL.instance}=${opts.instanceId}`], event: [...ACTIONS] },
        abortSignal: abort.signal,
      } as Parameters<typeof docker.getEvents>[0])
    } catch (err) {
      throw abort.signal.aborted ? abort.signal.reason : err
    } finally {
      clearTimeout(late)
    }
  }

  const follow = (conn: Connection) => {
    let buffered = ''
    conn.stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      let newline: number
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline).trim()
        buffered = buffered.slice(newline + 1)
        if (line) report(line)
      }
    })
    conn.stream.on('end', () => drop(conn, 'the stream ended'))
    conn.stream.on('close', () => drop(conn, 'the stream closed'))
    conn.stream.on('error', (err: Error) => drop(conn, err.message))
  }

  /** The next liveness check, `checkEveryMs` after the last one answered (one at a time). */
  const checkLater = (conn: Connection) => {
    conn.next = setTimeout(async () => {
      if (conn.dropped) return
      if ((conn.stream as { destroyed?: boolean }).destroyed) return drop(conn, 'the stream was destroyed')
      try {
        await conn.link.check()
        checkLater(conn)
      } catch (err) {
        setReachable(false)
        drop(conn, `liveness check: ${(err as Error).message}`)
      }
    }, timing.checkEveryMs)
    conn.next.unref?.()
  }

  /** Ends a connection once, whichever sign came first, and reconnects. */
  const drop = (conn: Connection, reason: string) => {
    if (conn.dropped) return
    conn.dropped = true
    clearTimeout(conn.next)
    conn.link.close()
    destroy(conn.stream)
    if (current === conn) current = null
    if (closed) return
    if (Date.now() - conn.openedAt > STABLE_MS) retryMs = timing.firstRetryMs
    opts.log.warn('the engine event stream ended; reconnecting', { reason, retry_ms: retryMs })
    schedule()
  }

  const report = (line: string) => {
    let event: { Action?: string; status?: string; id?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } }
    try {
      event = JSON.parse(line)
    } catch {
      return
    }
    // "die" carries exitCode; some engines send "kill" with a signal and "exec_die" (filtered out).
    const action = (event.Action ?? event.status ?? '') as SiteEventAction
    if (!ACTIONS.includes(action)) return
    const attrs = event.Actor?.Attributes ?? {}
    // A container with a role is no site's container: the disks helper, a site's database (issue 40,
    // which carries the site's labels so the site's removal takes it along).
    const role = attrs[ROLE_LABEL]
    if (role && role !== DATABASE_ROLE) return
    const slug = attrs[LABEL.slug]
    const siteId = attrs[LABEL.siteId]
    const containerId = event.Actor?.ID ?? event.id
    if (!slug || !siteId || !containerId) return
    try {
      if (role) {
        const database = attrs[DATABASE_LABEL]
        if (database) handlers.onDatabaseEvent?.({ action, slug, siteId, containerId, database })
        return
      }
      handlers.onEvent({ action, slug, siteId, containerId })
    } catch (err) {
      opts.log.error('a container event handler failed', { site: slug, action, error: (err as Error).message })
    }
  }

  void connect()
  return {
    close() {
      closed = true
      clearTimeout(timer)
      if (current) drop(current, 'closed')
    },
  }
}

function destroy(stream: NodeJS.ReadableStream): void {
  ;(stream as unknown as { destroy?: () => void }).destroy?.()
}
