import { buildAdmin, type Admin } from '../compose/admin'
import { DomainError } from '../domain/errors'
import { createLogger } from '../lib/logger'
import { UsageError, type CommandContext } from './command'
import { configFrom } from './config-flags'

/**
 * What berth sites list|show|suspend|resume|delete and berth accounts ... share: the admin's
 * services over the store of --data-dir or the config (read and written directly; `berth serve`
 * may run beside and sees the change within a quarter of a second), the exit status of a
 * refusal, and the tables they print.
 */

/** Exit status of an admin command refused by the domain: 2 for what the admin typed, 1 for a state that does not allow it (or a node that does not answer). */
const EXIT_OF_KIND: Partial<Record<DomainError['kind'], number>> = { not_found: 2, invalid: 2, conflict: 1, forbidden: 1, unavailable: 1 }

/** Runs `fn` over the admin's services; a refusal is printed as `berth: message` (or JSON on stderr) with its exit status. */
export async function withAdmin(ctx: CommandContext, fn: (admin: Admin) => Promise<number> | number): Promise<number> {
  const config = configFrom(ctx)
  // Warnings (a container the engine would not stop) and errors on stderr; stdout is the result's.
  const admin = buildAdmin(config, createLogger('warn', (line) => process.stderr.write(line + '\n')))
  return refusalsAsExit(ctx, () => fn(admin), () => admin.close())
}

/** Runs `fn`, then `close`; a refusal of the domain is printed as `berth: message` and answered with its exit status. */
export async function refusalsAsExit(ctx: CommandContext, fn: () => Promise<number> | number, close: () => Promise<void> | void): Promise<number> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof DomainError && EXIT_OF_KIND[err.kind] !== undefined) {
      ctx.out.error(err.message)
      return EXIT_OF_KIND[err.kind]!
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
