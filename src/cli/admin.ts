import { AdminRefusedError, AdminUnreachableError, callAdmin, type ProgressLine } from '../admin/client'
import { adminSocketPath, READ_ONLY_OPS, type AdminOp } from '../admin/protocol'
import { runAdminOp } from '../admin/routes'
import { buildApp } from '../compose/app'
import type { Config } from '../config/config'
import { DomainError } from '../domain/errors'
import { DataFolderLockedError, lockDataFolder } from '../drivers/host/data-lock'
import { createLogger } from '../lib/logger'
import { UsageError, type CommandContext } from './command'
import { configFrom } from './config-flags'

/**
 * What the admin commands (berth sites|accounts|plans|nodes ..., offsite push) share: each is a
 * client of the admin socket of the `berth serve` of its data folder (admin/client.ts), which
 * does the work and answers; the command prints what it did. With no server running, a command
 * that changes state refuses (exit 1, naming the fix); one that only reads (READ_ONLY_OPS) runs
 * the same operation on the store in its own process, holding the data folder's lock. Also the
 * exit status of a refusal, and the tables they print.
 */

/** Exit status of an admin command refused by the domain: 2 for what the admin typed, 1 for a state that does not allow it (or a node that does not answer). */
const EXIT_OF_KIND: Partial<Record<DomainError['kind'], number>> = { not_found: 2, invalid: 2, conflict: 1, forbidden: 1, unavailable: 1 }

export interface ViaServerOptions {
  /** What the command does with no server running, instead of refusing (berth nodes token). */
  offline?: () => Promise<{ ok: true; result: unknown } | { ok: false }>
  /** The exit status of every refusal of the domain, instead of its kind's (berth plans: 2). */
  refusalExit?: number
}

/** Where a command says berth serve is down, and how to start it. */
export function serveNotRunning(config: Config, socket: string, reason: 'absent' | 'refused'): string {
  const start = config.configFile ? `berth serve --config ${config.configFile}` : `berth serve --data-dir ${config.server.dataDir}`
  const where = reason === 'absent' ? `no admin socket at ${socket}` : `nothing answers on the admin socket ${socket}`
  return `berth serve is not running (${where}); start it: systemctl start berth (or ${start})`
}

/**
 * Runs the admin operation `op` through berth serve's admin socket and hands its result to
 * `print` (which returns the exit status). Progress lines are printed as they come: on stdout,
 * or with --json as the server's {"progress": ..., "step": ...} lines on stderr (stdout keeps the
 * one JSON document, the result, unchanged).
 * `offline`, when given, is what the command does with no server running instead of refusing.
 */
export async function viaServer<T>(ctx: CommandContext, op: AdminOp, input: Record<string, unknown>, print: (result: T) => number, opts: ViaServerOptions = {}): Promise<number> {
  const { offline } = opts
  const config = configFrom(ctx)
  const socket = adminSocketPath(config.server.dataDir)
  // As they come: a move's steps each print when berth serve reports it, not with the result.
  const progress = (line: ProgressLine) => {
    if (ctx.out.json) process.stderr.write(JSON.stringify(line) + '\n')
    else ctx.out.info(line.progress)
  }
  return refusalsAsExit(ctx, async () => {
    let result: unknown
    try {
      result = await callAdmin(socket, op, input, progress)
    } catch (err) {
      if (!(err instanceof AdminUnreachableError)) throw err
      if (err.reason === 'denied') {
        ctx.out.error(`the admin socket ${socket} is root's (mode 0600): run the command as root (sudo berth ...), on the box berth serve runs on`)
        return 1
      }
      if (!offline && !READ_ONLY_OPS.has(op)) {
        ctx.out.error(serveNotRunning(config, socket, err.reason))
        return 1
      }
      const local = offline ? await offline() : await locally(ctx, config, op, input)
      if (!local.ok) return 1
      result = local.result
    }
    return print(result as T)
  }, () => {}, opts.refusalExit)
}

/** A read-only operation in this process, when no berth serve runs: on the store, under the data folder's lock. */
async function locally(ctx: CommandContext, config: Config, op: AdminOp, input: Record<string, unknown>): Promise<{ ok: true; result: unknown } | { ok: false }> {
  const lock = lockOrSay(ctx, config.server.dataDir, `berth ${op.replace('/', ' ')}`)
  if (!lock) return { ok: false }
  try {
    // Warnings and errors on stderr; stdout is the result's.
    const local = buildApp(config, 'admin', { log: createLogger('warn', (line) => process.stderr.write(line + '\n')), firewall: null })
    try {
      return { ok: true, result: await runAdminOp(local.facades, op, input) }
    } finally {
      await local.close()
    }
  } finally {
    lock.release()
  }
}

/**
 * Takes the data folder's lock for a command that works on it without berth serve (restore,
 * migrate, install, a read-only admin command with no server); null, with the holder named on
 * stderr, when another process holds it.
 */
export function lockOrSay(ctx: CommandContext, dataDir: string, command: string): { release(): void } | null {
  try {
    return lockDataFolder(dataDir, command)
  } catch (err) {
    if (!(err instanceof DataFolderLockedError)) throw err
    ctx.out.error(`the data folder ${dataDir} is in use by ${err.holder ?? 'another process'} (${err.path}); ${command} works on it alone: wait for that to end${err.holder?.includes('berth serve') ? ', or stop berth serve first (systemctl stop berth)' : ''}`)
    return null
  }
}

/** Runs `fn`, then `close`; a refusal of the domain is printed as `berth: message` and answered with its exit status. */
export async function refusalsAsExit(ctx: CommandContext, fn: () => Promise<number> | number, close: () => Promise<void> | void, refusalExit?: number): Promise<number> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof DomainError && EXIT_OF_KIND[err.kind] !== undefined) {
      ctx.out.error(err.message)
      return refusalExit ?? EXIT_OF_KIND[err.kind]!
    }
    if (err instanceof AdminRefusedError) {
      ctx.out.error(err.message)
      return 1
    }
    throw err
  } finally {
    await close()
  }
}

/** The one positional argument a command takes (a slug, an account id), else a usage error naming it. */
export function onlyArgument(ctx: CommandContext, name: string, usage: string): string {
  const [value, ...rest] = ctx.positionals
  if (!value) throw new UsageError(`give the ${name}: ${usage}`)
  if (rest.length > 0) throw new UsageError(`one ${name} at a time (got ${ctx.positionals.join(' ')}): ${usage}`)
  return value
}

/** --reason TEXT, required and not blank. */
export function reasonFrom(ctx: CommandContext, command: string): string {
  const reason = ctx.values.reason
  if (typeof reason !== 'string' || !reason.trim()) throw new UsageError(`give the reason with --reason TEXT (the owner sees it): ${command}`)
  return reason
}

/** Columns padded to their widest cell, a header first. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows]
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)))
  return all.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n')
}

/** `key: value` lines, keys aligned. */
export function fields(pairs: [string, string][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1
  return pairs.map(([k, v]) => `${(k + ':').padEnd(width + 1)}${v}`).join('\n')
}

/** An ISO time as `YYYY-MM-DD HH:MM` UTC, for tables. */
export const shortTime = (iso: string | null) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : '-')
