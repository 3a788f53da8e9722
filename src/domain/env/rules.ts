import { invalid, op, say } from '../errors'

/** What a site may hold (docs/api.md, "Settings and secrets"). */
export const ENV_LIMITS = {
  /** Characters of a name. */
  nameChars: 128,
  /** UTF-8 bytes of one value. */
  valueBytes: 32 * 1024,
  /** Variables per site. */
  variables: 200,
  /** UTF-8 bytes of every name and value of a site together. */
  totalBytes: 256 * 1024,
} as const

/** A name as POSIX shells and every runtime read it (IEEE Std 1003.1, 8.1: letters, digits, underscore, not a digit first). */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$'
const NAME = new RegExp(ENV_NAME_PATTERN)

/**
 * Names the platform sets itself: the port the web process listens on, what the site user's
 * login and the image need (its home, its PATH holding the runtimes, the user and shell, what a
 * shell keeps for itself), and the dynamic loader's variables (an LD_PRELOAD would run inside
 * every build, exec and process of the site, Berth's own agent scripts included).
 */
export const RESERVED_NAMES: readonly string[] = ['PORT', 'HOME', 'PATH', 'USER', 'LOGNAME', 'SHELL', 'PWD', 'OLDPWD', 'HOSTNAME', 'SHLVL', '_']
/** Prefixes of names the platform keeps: Berth's own (BERTH_RELEASE, BERTH_PROCESS, ...) and the dynamic loader's. */
export const RESERVED_PREFIXES: readonly string[] = ['BERTH_', 'LD_']

/** Throws invalid naming `param` unless `name` is one a site may set. */
export function checkName(name: string, param: string): void {
  if (name.length === 0 || name.length > ENV_LIMITS.nameChars || !NAME.test(name)) {
    throw invalid(param, `'${shown(name)}' is not a variable name: use letters, digits and underscores, not starting with a digit, at most ${ENV_LIMITS.nameChars} characters (e.g. DATABASE_URL).`)
  }
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p))
  if (RESERVED_NAMES.includes(name) || prefix) {
    throw invalid(param, `${name} is set by the platform${prefix ? ` (every name starting ${prefix} is)` : ''}; choose another name. Reserved: ${RESERVED_NAMES.join(', ')} and names starting ${RESERVED_PREFIXES.join(' or ')}.`)
  }
}

/** Throws invalid naming `param` unless `value` fits in one variable. */
export function checkValue(value: string, param: string): void {
  const bytes = Buffer.byteLength(value, 'utf8')
  if (bytes > ENV_LIMITS.valueBytes) throw invalid(param, say`The value is ${bytes} bytes; a variable holds at most ${ENV_LIMITS.valueBytes} (32 KiB). Keep larger data in a file of the site (${op('writeFile')}) and put its path here.`)
  // An environment is C strings: a NUL would cut the value short in every process.
  if (value.includes('\u0000')) throw invalid(param, 'The value holds a NUL character, which no process environment can carry; remove it.')
}

/** Throws invalid when the site's set would be over the limits once changed. */
export function checkTotals(count: number, bytes: number, slug: string): void {
  if (count > ENV_LIMITS.variables) {
    throw invalid('variables', say`This would give '${slug}' ${count} variables; a site holds at most ${ENV_LIMITS.variables}. Remove some with null (${op('updateSiteEnv', { tenant_slug: slug })}) first.`)
  }
  if (bytes > ENV_LIMITS.totalBytes) {
    throw invalid('variables', say`This would give '${slug}' ${bytes} bytes of names and values; a site holds at most ${ENV_LIMITS.totalBytes} (256 KiB). Keep large data in a file of the site and put its path in a variable.`)
  }
}

const shown = (name: string) => (name.length > 40 ? `${name.slice(0, 37)}...` : name)
