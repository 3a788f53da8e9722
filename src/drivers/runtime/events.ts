import type { Logger } from '../../lib/logger'
import { openEngine } from './engine'
import { LABEL } from './site-container'
import type { SiteEvent, SiteEventAction, SiteWatch } from './types'

const ACTIONS: readonly SiteEventAction[] = ['start', 'die', 'stop', 'kill', 'oom', 'destroy']
/** Reconnect delays after the stream ends or fails: 0.25 s doubling to 10 s. */
const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 10_000
/** A stream that stayed up this long resets the back-off. */
const STABLE_MS = 30_000

/**
 * Follows the engine's event stream (GET /events) for this instance's site containers and
 * reports each start, death, stop, kill, OOM and removal at once. When the stream ends (the
 * engine restarted) or cannot be opened, it reconnects with back-off and, once connected again,
 * calls `onReconnect`: events of the gap are lost, so the caller compares everything then.
 * Uses its own client with no request timeout: the stream is meant to stay open.
 */
export function watchSiteEvents(opts: { socketPath: string; instanceId: string; log: Logger }, handlers: { onEvent(e: SiteEvent): void; onReconnect(): void }): SiteWatch {
  let closed = false
  let stream: NodeJS.ReadableStream | null = null
  let retryMs = FIRST_RETRY_MS
  let timer: ReturnType<typeof setTimeout> | undefined
  let connections = 0

  const schedule = () => {
    if (closed) return
    timer = setTimeout(connect, retryMs)
    timer.unref?.()
    retryMs = Math.min(MAX_RETRY_MS, retryMs * 2)
  }

  const connect = async () => {
    if (closed) return
    try {
      const docker = await openEngine(opts.socketPath, 0)
      const s = await docker.getEvents({
        filters: { type: ['container'], label: [`${LABEL.instance}=${opts.instanceId}`], event: [...ACTIONS] },
      })
      if (closed) return destroy(s)
      stream = s
      const openedAt = Date.now()
      if (connections++ > 0) {
        opts.log.info('following the engine events again')
        handlers.onReconnect()
      }
      let buffered = ''
      s.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8')
        let newline: number
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim()
          buffered = buffered.slice(newline + 1)
          if (line) report(line)
        }
      })
      let ended = false
      const onEnd = (err?: Error) => {
        if (ended) return
        ended = true
        stream = null
        if (closed) return
        if (Date.now() - openedAt > STABLE_MS) retryMs = FIRST_RETRY_MS
        opts.log.warn('the engine event stream ended; reconnecting', { error: err?.message ?? null, retry_ms: retryMs })
        schedule()
      }
      s.on('end', () => onEnd())
      s.on('close', () => onEnd())
      s.on('error', (err: Error) => onEnd(err))
    } catch (err) {
      if (connections === 0 && retryMs === FIRST_RETRY_MS) opts.log.warn('cannot follow the engine events yet; retrying', { error: (err as Error).message })
      // The first successful connection after failures counts as a reconnect too.
      connections = Math.max(connections, 1)
      schedule()
    }
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
    const slug = attrs[LABEL.slug]
    const siteId = attrs[LABEL.siteId]
    const containerId = event.Actor?.ID ?? event.id
    if (!slug || !siteId || !containerId) return
    try {
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
      if (stream) destroy(stream)
      stream = null
    },
  }
}

function destroy(stream: NodeJS.ReadableStream): void {
  ;(stream as unknown as { destroy?: () => void }).destroy?.()
}
