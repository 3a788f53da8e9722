import type { ListenerServer, ListenerSocket, SocketDoor } from '../dispatch'
import { type ConsoleGrant, type ConsoleSession, type ConsoleSessions, type ConsoleTickets, inputOverflow, type SessionPeer } from '../domain/console'
import { asDomainError } from '../domain/errors'
import type { Logger } from '../lib/logger'
import { ASSETS_PATH, assetResponse } from './assets'
import { refusalStatus, refusalText, refusedPage, terminalPage } from './page'

export interface ConsoleDoorDeps {
  tickets: Pick<ConsoleTickets, 'peek' | 'take'>
  sessions: Pick<ConsoleSessions, 'requireRoom' | 'start' | 'inputLimitBytes'>
  /** Berth's public origin (config `server.site_url`): the only Origin a browser may upgrade from. */
  siteUrl: string
  log: Logger
}

/** `/console/{ticket}` and `/console/{ticket}/socket`; a ticket is 43 base64url characters (256 bits). */
const ROUTE = /^\/console\/([A-Za-z0-9_-]{43})(\/socket)?\/?(?:\?.*)?$/
/** The terminal's size when the client names none, and the bounds of one it names. */
const DEFAULT_SIZE = { cols: 80, rows: 24 }
const MAX_SIDE = 1000

/**
 * The console's door on Berth's own origin (LISTENER_ROUTES' `console` entry): the page, its
 * assets, and the WebSocket, whose protocol docs/api.md describes. The upgrade spends the ticket;
 * before it, a refused ticket, a foreign Origin or a site with no room is an HTTP answer saying
 * so. Returns undefined when the request became a WebSocket.
 */
export function consoleDoor(d: ConsoleDoorDeps) {
  const siteOrigin = new URL(d.siteUrl).origin
  const socketOrigin = siteOrigin.replace(/^http/, 'ws')
  return {
    handle(request: Request, server: ListenerServer): Response | undefined {
      const url = new URL(request.url)
      const path = url.pathname
      if (path.startsWith(ASSETS_PATH)) return (isRead(request) && assetResponse(path)) || notFound()
      const m = ROUTE.exec(path)
      if (!m) return notFound()
      const ticket = m[1]!
      if (!m[2]) {
        if (!isRead(request)) return text(405, 'The console page answers GET only.\n', { allow: 'GET, HEAD' })
        const seen = d.tickets.peek(ticket)
        return seen.state === 'valid' ? terminalPage(seen.grant.slug, socketOrigin) : refusedPage(seen.state, socketOrigin)
      }
      return upgrade(request, server, ticket, url)
    },
  }

  function upgrade(request: Request, server: ListenerServer, ticket: string, url: URL): Response | undefined {
    if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return text(426, 'This is the console\'s WebSocket: connect with a WebSocket client (docs/api.md, Console).\n', { upgrade: 'websocket' })
    // Cross-site WebSocket hijacking: a browser sends the Origin of the page that connects; only
    // Berth's own page may (programs send none).
    const origin = request.headers.get('origin')
    if (origin !== null && origin !== siteOrigin) return text(403, `WebSocket connections to the console come from ${siteOrigin} only (the console page), or from programs that send no Origin.\n`)
    const seen = d.tickets.peek(ticket)
    if (seen.state !== 'valid') return text(refusalStatus(seen.state), refusalText(seen.state))
    try {
      d.sessions.requireRoom(seen.grant.siteId, seen.grant.slug)
    } catch (err) {
      const e = asDomainError(err)
      if (e?.kind === 'over_budget') return text(429, `${e.message}\n`, { 'retry-after': '30' })
      throw err
    }
    // Spent here, and only once the connection is good to go.
    const taken = d.tickets.take(ticket)
    if (taken.state !== 'valid') return text(refusalStatus(taken.state), refusalText(taken.state))
    const door = sessionSocket(taken.grant, sizeOf(url), d)
    if (server.upgrade(request, { data: door })) return undefined
    return text(400, 'The WebSocket upgrade failed; check the request\'s Sec-WebSocket-* headers.\n')
  }
}

/**
 * One WebSocket's session: started once the socket is open; what the client sends meanwhile is
 * kept for it, up to the sessions' input bound (past it the session ends, input_overflow, as it
 * does once started). Every end (the shell's exit, a limit, a revoked key) is a last text frame,
 * then the close (1000).
 */
function sessionSocket(grant: ConsoleGrant, size: { cols: number; rows: number }, d: ConsoleDoorDeps): SocketDoor {
  let session: ConsoleSession | null = null
  let closed = false
  const early: (string | Uint8Array)[] = []
  let earlyBytes = 0
  const finish = (ws: ListenerSocket, frame: Record<string, unknown>, code: string) => {
    if (closed) return
    closed = true
    ws.send(JSON.stringify(frame))
    ws.close(1000, code)
  }
  const fail = (ws: ListenerSocket, code: string, message: string) => finish(ws, { type: 'error', code, message }, code)
  const take = (ws: ListenerSocket, message: string | Uint8Array) => {
    if (!session) {
      earlyBytes += typeof message === 'string' ? message.length : message.byteLength
      if (earlyBytes > d.sessions.inputLimitBytes) {
        early.length = 0
        return fail(ws, 'input_overflow', inputOverflow(d.sessions.inputLimitBytes).message)
      }
      return void early.push(message)
    }
    if (typeof message !== 'string') return session.input(message)
    const control = controlOf(message)
    if (control === 'bad') {
      fail(ws, 'bad_message', 'A text frame must be a JSON control message: {"type":"resize","cols":1-1000,"rows":1-1000}; send keys as binary frames.')
      session.hangUp()
    } else if (control) session.resize(control.cols, control.rows)
  }
  return {
    open(ws) {
      const peer: SessionPeer = {
        output: (bytes) => ws.sendBinary(bytes) > 0,
        ended: (end) => (end.reason ? fail(ws, end.reason.code, end.reason.message) : finish(ws, { type: 'exit', code: end.exitCode }, 'exit')),
      }
      d.sessions.start(grant, size, peer).then((started) => {
        session = started
        if (closed) return started.hangUp()
        for (const message of early.splice(0)) take(ws, message)
      }, (err) => {
        const e = asDomainError(err)
        if (!e) d.log.error('a console session could not start', { site: grant.slug, error: (err as Error).message })
        fail(ws, e ? START_FAILURES[e.kind] ?? 'internal_error' : 'internal_error', e ? e.message : 'The session could not start; retry, and report it if it goes on.')
      })
    },
    message: (ws, message) => {
      if (!closed) take(ws, typeof message === 'string' ? message : new Uint8Array(message.buffer, message.byteOffset, message.byteLength))
    },
    drain: () => session?.drained(),
    close: () => {
      closed = true
      session?.hangUp()
    },
  }
}

/** The error code of a session that could not start, by the domain's kind. */
const START_FAILURES: Partial<Record<string, string>> = {
  over_budget: 'too_many_sessions',
  unauthorized: 'key_revoked',
  conflict: 'site_unavailable',
  unavailable: 'engine_unavailable',
}

/** A text frame: a resize, null for a type this server does not know (ignored: newer clients), or 'bad'. */
function controlOf(message: string): { cols: number; rows: number } | null | 'bad' {
  let parsed: unknown
  try {
    parsed = JSON.parse(message)
  } catch {
    return 'bad'
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { type?: unknown }).type !== 'string') return 'bad'
  const c = parsed as { type: string; cols?: unknown; rows?: unknown }
  if (c.type !== 'resize') return null
  return isSide(c.cols) && isSide(c.rows) ? { cols: c.cols, rows: c.rows } : 'bad'
}

const isSide = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_SIDE

/** The first size from `?cols=&rows=`, or 80x24 for what is missing or out of bounds. */
function sizeOf(url: URL): { cols: number; rows: number } {
  const side = (name: 'cols' | 'rows') => {
    const n = Number(url.searchParams.get(name))
    return isSide(n) ? n : DEFAULT_SIZE[name]
  }
  return { cols: side('cols'), rows: side('rows') }
}

const isRead = (request: Request) => request.method === 'GET' || request.method === 'HEAD'
const notFound = () => text(404, 'Not found.\n')
const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers } })
