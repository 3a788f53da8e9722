/** Structured logs: one JSON object per line on standard output, which journald keeps. */
export interface Logger {
  error(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  debug(msg: string, fields?: Record<string, unknown>): void
}

const LEVELS = { error: 0, warn: 1, info: 2, debug: 3 } as const
export type LogLevel = keyof typeof LEVELS

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stdout.write(l + '\n')): Logger {
  const emit = (lvl: LogLevel) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[lvl] > LEVELS[level]) return
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }))
  }
  return { error: emit('error'), warn: emit('warn'), info: emit('info'), debug: emit('debug') }
}

/** A logger that keeps lines in memory; for tests that assert on what was logged. */
export function memoryLogger(lines: Record<string, unknown>[] = []): Logger & { lines: Record<string, unknown>[] } {
  const log = createLogger('debug', (l) => lines.push(JSON.parse(l)))
  return Object.assign(log, { lines })
}
