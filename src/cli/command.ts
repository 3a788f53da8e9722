import { writeSync } from 'node:fs'
import { parseArgs } from 'node:util'

export interface OptionSpec {
  type: 'string' | 'boolean'
  /** Value placeholder shown in help, e.g. HOST:PORT. */
  value?: string
  help: string
  multiple?: boolean
}

export interface CommandContext {
  values: Record<string, string | boolean | string[] | undefined>
  positionals: string[]
  env: Record<string, string | undefined>
  out: Output
}

export interface Command {
  /** Words that select it, e.g. ['plans', 'add']. */
  path: string[]
  summary: string
  usage: string
  description?: string
  options: Record<string, OptionSpec>
  examples?: string[]
  run(ctx: CommandContext): Promise<number> | number
}

/** Where commands print: JSON for `--json` callers, words for people. */
export interface Output {
  json: boolean
  /** Prints `data` as one JSON document with --json, else calls `human`. */
  result(data: unknown, human: () => string): void
  info(line: string): void
  error(line: string): void
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(data, human) {
      writeAll(1, json ? JSON.stringify(data, null, 2) + '\n' : human() + '\n')
    },
    info(line) {
      if (!json) writeAll(1, line + '\n')
    },
    error(line) {
      if (json) process.stderr.write(JSON.stringify({ error: line }) + '\n')
      else process.stderr.write(`berth: ${line}\n`)
    },
  }
}

/**
 * Writes `text` whole to the file descriptor before returning: a result of megabytes (berth sites
 * list --json of 1,000 sites) piped to another program, which process.stdout.write would leave
 * half written when berth exits right after (at 64 KiB, the pipe's buffer).
 */
export function writeAll(fd: number, text: string): void {
  let bytes = Buffer.from(text)
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes))
    } catch (err) {
      // A non-blocking pipe that is full: wait a moment for the reader.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err
      Bun.sleepSync(1)
    }
  }
}

/** Options every admin command accepts. */
export const COMMON_OPTIONS: Record<string, OptionSpec> = {
  json: { type: 'boolean', help: 'Print the result as JSON.' },
  help: { type: 'boolean', help: 'Show this help.' },
}

/** Options of commands that open the store. */
export const STORE_OPTIONS: Record<string, OptionSpec> = {
  config: { type: 'string', value: 'FILE', help: 'Config file (default: $BERTH_CONFIG, else /etc/berth/berth.toml if present).' },
  'data-dir': { type: 'string', value: 'DIR', help: 'Data folder holding berth.db (default: server.data_dir; $BERTH_SERVER_DATA_DIR).' },
}

export class UsageError extends Error {}

export function parseCommandArgs(cmd: Command, argv: string[]) {
  const options = Object.fromEntries(
    Object.entries(cmd.options).map(([name, o]) => [name, { type: o.type, multiple: o.multiple }]),
  )
  try {
    return parseArgs({ args: argv, options: options as never, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

export function renderHelp(cmd: Command): string {
  const rows = Object.entries(cmd.options).map(([name, o]) => [`--${name}${o.value ? ` ${o.value}` : ''}`, o.help])
  const width = Math.max(...rows.map((r) => r[0].length)) + 2
  const lines = [`Usage: ${cmd.usage}`, '', cmd.summary]
  if (cmd.description) lines.push('', cmd.description)
  lines.push('', 'Options:', ...rows.map(([flag, help]) => `  ${flag.padEnd(width)}${help}`))
  if (cmd.examples?.length) lines.push('', 'Examples:', ...cmd.examples.map((e) => `  ${e}`))
  return lines.join('\n')
}
