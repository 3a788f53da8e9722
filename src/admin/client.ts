/**
 * The admin commands' side of the admin API (admin/protocol.ts): one call per command, over
 * the Unix socket of the `berth serve` of the same data folder. Progress lines are handed to
 * `onProgress` as they come; the result is returned, a refusal thrown as the DomainError the
 * server raised (its kind decides the exit status, as in-process), and a socket that nobody
 * serves or that this user may not open as AdminUnreachableError.
 */
import { DomainError, type ErrorKind } from '../domain/errors'
import type { AdminLine, AdminOp } from './protocol'

/** A progress line as it came: its text, and the step it words when it is one. */
export type ProgressLine = Extract<AdminLine, { progress: string }>

/** Why the socket could not be reached: `absent` (no file), `refused` (a file nobody listens on: berth serve stopped or died), `denied` (not this user's). */
export type Unreachable = 'absent' | 'refused' | 'denied'

export class AdminUnreachableError extends Error {
  constructor(readonly socket: string, readonly reason: Unreachable) {
    super(`admin socket ${socket}: ${reason}`)
  }
}

/** A refusal of the server that is no DomainError: the box runs no cluster, copies off the box are off, or the operation failed. */
export class AdminRefusedError extends Error {
  constructor(readonly kind: string, message: string) {
    super(message)
  }
}

const UNREACHABLE: Record<string, Unreachable> = { ENOENT: 'absent', ECONNREFUSED: 'refused', EACCES: 'denied', EPERM: 'denied', ENOTSOCK: 'refused' }

export async function callAdmin(socket: string, op: AdminOp, input: Record<string, unknown>, onProgress: (line: ProgressLine) => void = () => {}): Promise<unknown> {
  let response: Response
  try {
    response = await fetch(`http://berth-admin/v1/${op}`, { unix: socket, method: 'POST', body: JSON.stringify(input), headers: { 'content-type': 'application/json' } })
  } catch (err) {
    const reason = UNREACHABLE[(err as NodeJS.ErrnoException).code ?? '']
    if (reason) throw new AdminUnreachableError(socket, reason)
    throw err
  }
  let final: AdminLine | null = null
  let buffered = ''
  const decoder = new TextDecoder()
  const take = (line: string) => {
    if (!line.trim()) return
    const parsed = JSON.parse(line) as AdminLine
    if ('progress' in parsed) onProgress(parsed)
    else final = parsed
  }
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true })
    let newline
    while ((newline = buffered.indexOf('\n')) >= 0) {
      take(buffered.slice(0, newline))
      buffered = buffered.slice(newline + 1)
    }
  }
  take(buffered)
  const end = final as AdminLine | null
  if (end === null) throw new AdminRefusedError('internal', 'berth serve closed the admin connection before answering (it may have stopped); see its log')
  if ('result' in end) return end.result
  if ('error' in end) {
    const { kind, message, field } = end.error
    if (kind === 'internal' || kind === 'no_cluster' || kind === 'no_offsite') throw new AdminRefusedError(kind, message)
    throw new DomainError(kind as ErrorKind, message, field)
  }
  throw new AdminRefusedError('internal', 'berth serve sent a line the admin client does not know')
}
