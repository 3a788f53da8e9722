import { UnsafeArchiveError } from '../../drivers/archives/types'
import { FileError, type FileNextStep, type FileProblem } from '../../drivers/files/errors'
import { parsePath } from '../../drivers/files/path'
import { SyscallError } from '../../drivers/files/syscalls'

/**
 * What a node's agent and the control plane say to each other about a site's home (issue 28):
 * the operations of the homeCall route (./routes.ts), the limits of each request, and how an error
 * crosses the wire so that the control plane throws the very error a home on its own box throws
 * (FileError with its problem and next step, a node:fs error with its `code`, SyscallError), and
 * the domain answers a remote site as it answers a local one. The agent's side is
 * ../server/home-agent.ts, the control plane's ../client/remote-home.ts.
 */

/** SiteHome's operations (`open` opens and closes the home: it exists), `exists` (entryExists at the root) and SiteReader's (`reader.*`). */
export const HOME_OPS = ['open', 'list', 'folder', 'read', 'write', 'append', 'mkdir', 'remove', 'rotate', 'exists', 'reader.list', 'reader.stat', 'reader.read'] as const
export type HomeOp = (typeof HOME_OPS)[number]

/** The body of the homeCall route (contract/routes.ts). Bytes (write, append) are base64. */
export interface HomeCall {
  op: HomeOp
  args: unknown[]
  owner: { uid: number; gid: number }
}

/**
 * The largest call body the agent reads: an upload of the files API (10 MiB) in base64 (4/3)
 * with its JSON around it. What Berth writes is bounded well below (domain/files/limits.ts).
 */
export const MAX_CALL_BYTES = 16 * 1024 * 1024
/** The most bytes one write or append sends, before base64. */
export const MAX_CALL_DATA = 12 * 1024 * 1024
/** The most bytes one ranged read of `GET file` answers (the log reader asks 64 KiB at a time). */
export const MAX_RANGE_BYTES = 8 * 1024 * 1024
/** What opening a file for reading fetches at once: its end, where a log's newest lines are. */
export const OPEN_TAIL_BYTES = 64 * 1024

/** An error as it crosses the wire: `{ error: WireError }`. */
export interface WireError {
  /** file: a FileError (`code` its problem); errno: a node:fs error (`code` such as ENOENT); syscall: a SyscallError; archive: an UnsafeArchiveError (replaceHome refused the archive); error: anything else. */
  kind: 'file' | 'errno' | 'syscall' | 'archive' | 'error'
  code: string
  message: string
  next?: FileNextStep | null
  errno?: number
  syscall?: string
}

/** `err` for the wire, with the HTTP status the agent answers it with. */
export function wireError(err: unknown): { status: number; error: WireError } {
  if (err instanceof FileError) return { status: 422, error: { kind: 'file', code: err.problem, message: err.message, next: err.next } }
  if (err instanceof UnsafeArchiveError) return { status: 422, error: { kind: 'archive', code: 'unsafe_archive', message: err.message } }
  if (err instanceof SyscallError) return { status: 500, error: { kind: 'syscall', code: 'syscall', message: err.message, syscall: err.call, errno: err.errno } }
  const e = err as NodeJS.ErrnoException | null
  if (e && typeof e.code === 'string' && typeof e.errno === 'number') {
    return { status: e.code === 'ENOENT' ? 404 : 500, error: { kind: 'errno', code: e.code, message: e.message, errno: e.errno, syscall: e.syscall } }
  }
  return { status: 500, error: { kind: 'error', code: 'internal', message: (err as Error)?.message ?? String(err) } }
}

/** The error `wire` stands for, of the class the agent caught. */
export function errorOf(wire: WireError): Error {
  switch (wire.kind) {
    case 'file':
      return new FileError(wire.code as FileProblem, wire.message, wire.next ?? null)
    case 'archive':
      return new UnsafeArchiveError(wire.message)
    case 'syscall':
      return new SyscallError(wire.syscall ?? 'syscall', wire.errno ?? 0)
    case 'errno':
      return Object.assign(new Error(wire.message), { code: wire.code, errno: wire.errno, syscall: wire.syscall })
    default:
      return new Error(wire.message)
  }
}

/** A node:fs-like ENOENT: the home's folder (the volume) is not on the node. */
export function missingHome(message = "The site's volume is not on its node."): Error {
  return Object.assign(new Error(message), { code: 'ENOENT', errno: -2, syscall: 'open' })
}

/** `keep` (names at the root an archive leaves out) as a query value, and back; each name checked. */
export function keepQuery(keep: readonly string[]): string {
  return keep.map((name) => checkedName(name)).join(',')
}

export function keepOf(query: string | null): string[] {
  return query ? query.split(',').map((name) => checkedName(name)) : []
}

/** One name at the root of the home: no `/`, no `..`, none of the rules of parsePath broken. */
export function checkedName(name: string): string {
  const names = parsePath(name)
  if (names.length !== 1 || names[0] !== name || name.includes(',')) throw new FileError('bad_path', `'${name}' is not a single name at the root of the home.`)
  return name
}
