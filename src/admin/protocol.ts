/**
 * The admin API's wire format, shared by the listener (admin/listener.ts, in `berth serve`) and
 * its client (admin/client.ts, in the admin commands): HTTP over the Unix socket
 * DATA_DIR/admin.sock, one operation per path (`POST /v1/sites/suspend`), a JSON object in.
 * The answer is NDJSON: zero or more `{"progress": "...", "step"?: {...}}` lines while the work runs
 * (a move, an evacuation and a drain --move send one per step, as it happens), then one
 * `{"result": ...}` or `{"error": {"kind", "message", "field"}}` line. A refusal's kind is the
 * domain's (DomainError.kind): the CLI turns it into its exit status.
 */
import { join } from 'node:path'
import type { NodeStep } from '../domain/cluster'
import type { ErrorKind } from '../domain/errors'
import type { OffsiteStep } from '../domain/offsite'

/** A step of a long operation (a move, an evacuation, a drain --move, an offsite push), sent with its progress line. */
export type AdminStep = NodeStep | OffsiteStep

export const ADMIN_SOCKET_FILE = 'admin.sock'

/** Where `berth serve` listens for the admin commands: in the data folder (root's, mode 0750), the socket itself 0600. */
export function adminSocketPath(dataDir: string): string {
  return join(dataDir, ADMIN_SOCKET_FILE)
}

/** The operations, by path under /v1/. */
export const ADMIN_OPS = [
  'sites/list', 'sites/show', 'sites/suspend', 'sites/resume', 'sites/delete', 'sites/move',
  'accounts/list', 'accounts/show', 'accounts/suspend', 'accounts/resume',
  'plans/list', 'plans/add', 'plans/deprecate',
  'nodes/list', 'nodes/drain', 'nodes/undrain', 'nodes/remove', 'nodes/evacuate', 'nodes/set', 'nodes/token',
  'offsite/push', 'offsite/status',
] as const
export type AdminOp = (typeof ADMIN_OPS)[number]

/** The operations that only read: they may run on the store directly when no server runs. */
export const READ_ONLY_OPS: ReadonlySet<AdminOp> = new Set(['sites/list', 'sites/show', 'accounts/list', 'accounts/show', 'plans/list', 'nodes/list'])

export const isAdminOp = (op: string): op is AdminOp => (ADMIN_OPS as readonly string[]).includes(op)

export type AdminLine =
  /** A line for the command to print; `step`, when the operation reports its steps (domain/cluster/steps.ts), the step it words. */
  | { progress: string; step?: AdminStep }
  | { result: unknown }
  | { error: { kind: ErrorKind | 'internal' | 'no_cluster' | 'no_offsite'; message: string; field: string | null } }
