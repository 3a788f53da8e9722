/**
 * The admin API of `berth serve`: HTTP on the Unix socket DATA_DIR/admin.sock, for the admin
 * commands (admin/client.ts) and nothing else. It is never mounted on the API listener, the edge,
 * MCP or the console (src/server.ts knows nothing of it).
 *
 * Who may call: root. Bun gives a Unix socket's handler no peer credentials (no SO_PEERCRED),
 * so the check is the file system's: the socket is made under umask 0177 (mode 0600 from its
 * first instant) in the data folder, both owned by the user berth serve runs as (root under
 * systemd); connect(2) needs write permission on the socket, which nobody else has.
 *
 * An operation runs to its end whether or not its client is still there: a client killed in the
 * middle of a move does not stop the move; its progress and result lines are then dropped.
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs'
import { DomainError } from '../domain/errors'
import type { Logger } from '../lib/logger'
import type { AdminFacades } from './facades'
import { isAdminOp, type AdminLine } from './protocol'
import { AdminUnsupportedError, runAdminOp } from './routes'

/** How often a quiet operation sends a blank line (below Bun's 10 s idle timeout). */
const HEARTBEAT_MS = 4_000

export interface AdminListener {
  path: string
  stop(): Promise<void>
}

/**
 * Listens on `path`. A socket file left there by a berth serve that died is removed first: the
 * caller holds the data folder's lock (drivers/host/data-lock.ts), so no other server uses it.
 */
export function startAdminListener(path: string, facades: AdminFacades, log: Logger): AdminListener {
  removeStaleSocket(path)
  const running = new Set<Promise<unknown>>()
  const previous = process.umask(0o177)
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({
      unix: path,
      fetch: (request) => answer(request, facades, log, running),
    })
  } finally {
    process.umask(previous)
  }
  chmodSync(path, 0o600)
  return {
    path,
    async stop() {
      server.stop(true)
      // Operations under way finish (a move half done would otherwise wait for the next start's recovery).
      await Promise.allSettled([...running])
      removeStaleSocket(path)
    },
  }
}

function removeStaleSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}

async function answer(request: Request, facades: AdminFacades, log: Logger, running: Set<Promise<unknown>>): Promise<Response> {
  const op = new URL(request.url).pathname.replace(/^\/v1\//, '').replace(/\/$/, '')
  if (request.method !== 'POST' || !isAdminOp(op)) {
    return ndjson(404, [{ error: { kind: 'not_found', message: `no admin operation ${request.method} ${new URL(request.url).pathname}`, field: null } }])
  }
  let input: Record<string, unknown>
  try {
    const body = await request.text()
    input = body ? JSON.parse(body) : {}
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new SyntaxError('not an object')
  } catch {
    return ndjson(400, [{ error: { kind: 'invalid', message: 'the body must be a JSON object', field: null } }])
  }
  let enqueue: (text: string) => void = () => {}
  let push: (line: AdminLine) => void = () => {}
  let close: () => void = () => {}
  const stream = new ReadableStream<string>({
    start(controller) {
      enqueue = (text) => controller.enqueue(text)
      push = (line) => {
        try {
          controller.enqueue(JSON.stringify(line) + '\n')
        } catch {
          // The client went away: the work goes on, its lines are dropped.
        }
      }
      close = () => {
        try {
          controller.close()
        } catch {
          // Already closed by the client's going.
        }
      }
    },
  })
  // A move or an evacuation takes minutes: a blank line every few seconds keeps the connection from
  // looking idle (the client skips blank lines).
  const heartbeat = setInterval(() => {
    try {
      enqueue('\n')
    } catch {
      // The client went away.
    }
  }, HEARTBEAT_MS)
  const work = runAdminOp(facades, op, input, push)
    .then((result) => push({ result }))
    .catch((err) => push({ error: errorLine(err, op, log) }))
    .finally(() => {
      clearInterval(heartbeat)
      close()
      running.delete(work)
    })
  running.add(work)
  return new Response(stream, { headers: { 'content-type': 'application/x-ndjson' } })
}

function errorLine(err: unknown, op: string, log: Logger): Extract<AdminLine, { error: unknown }>['error'] {
  if (err instanceof DomainError) return { kind: err.kind, message: err.message, field: err.field }
  if (err instanceof AdminUnsupportedError) return { kind: err.kind, message: err.message, field: null }
  log.error('an admin operation failed', { op, error: (err as Error)?.message ?? String(err) })
  return { kind: 'internal', message: (err as Error)?.message ?? String(err), field: null }
}

function ndjson(status: number, lines: AdminLine[]): Response {
  return new Response(lines.map((l) => JSON.stringify(l) + '\n').join(''), { status, headers: { 'content-type': 'application/x-ndjson' } })
}
