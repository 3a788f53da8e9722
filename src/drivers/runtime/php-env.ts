import type { ContainerRuntime } from './types'

/**
 * The site's settings and secrets as PHP sees them (berth/php and berth/app): PHP-FPM clears its
 * workers' environment (clear_env), so the pool reads them from `env[NAME] = "value"` lines in
 * this file, which its configuration includes (PHP_FPM_CONF). It lives on the container's /tmp
 * (a tmpfs: never on a disk), mode 0600, and is written by Berth at each start of the container
 * and at each change of the variables, followed by a graceful reload of PHP-FPM (SIGUSR2: the
 * master re-execs in place on its open socket; a worker finishes its request first, within
 * process_control_timeout). A value is never on a command line, so never in `ps`.
 */
export const PHP_ENV_FILE = '/tmp/berth-php-env.conf'

/**
 * Why a value cannot go into the pool file, or null when it can: php-fpm's configuration holds
 * no line break in a value, refuses an empty one, and replaces one that starts with `$` by the
 * master's own variable of that name.
 */
export function phpEnvUnfit(value: string): string | null {
  if (value === '') return 'empty'
  if (/[\r\n]/.test(value)) return 'a line break'
  if (value.startsWith('$')) return 'a leading $'
  return null
}

/**
 * Characters that mean nothing but themselves in a double-quoted value of PHP's ini syntax (no
 * quote, backslash, `$` or brace): a file of such values always loads. A database's URL, a token,
 * a host name, a number are made of them.
 */
const PLAIN_VALUE = /^[A-Za-z0-9 _.:/@?&=%+,~-]*$/

/**
 * The pool file's text for `values`, the names left out (see phpEnvUnfit), and whether every
 * value written is plain (PLAIN_VALUE): then the file needs no `php-fpm -t` before the reload.
 */
export function phpPoolEnv(values: Record<string, string>): { text: string; left: string[]; plain: boolean } {
  const lines = ['; The site\'s settings and secrets for PHP-FPM (written by Berth; see docs/api.md).', '[site]']
  const left: string[] = []
  let plain = true
  for (const [name, value] of Object.entries(values).sort(([a], [b]) => (a < b ? -1 : 1))) {
    // Names are checked when set (letters, digits, _); one that is not is never written.
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || phpEnvUnfit(value) !== null) {
      left.push(name)
      continue
    }
    plain &&= PLAIN_VALUE.test(value)
    // In a double-quoted value of PHP's ini syntax, \ " and $ are escaped with a backslash.
    lines.push(`env[${name}] = "${value.replace(/[\\"$]/g, (c) => `\\${c}`)}"`)
  }
  return { text: `${lines.join('\n')}\n`, left, plain }
}

/**
 * Puts the file in place (from the input: no value on a command line) and reloads PHP-FPM when
 * it runs. With `check` ($1) the configuration is checked first (php-fpm -t, ~40 ms here); when
 * it does not load, the previous file is kept, so a reload can never stop PHP. `plain` (every
 * value plain: phpPoolEnv) skips the check, which such a file always passes. Exit 0: written (and
 * reloaded, when PHP-FPM runs).
 */
export const PHP_ENV_WRITE = `set -u
umask 077
f=${PHP_ENV_FILE}
cat > "$f.new" || exit 1
[ -e "$f" ] && cp -p "$f" "$f.old"
mv -f "$f.new" "$f"
if [ "$1" = check ] && ! PHP_FPM_MAX_CHILDREN=2 php-fpm -t --fpm-config /etc/berth/php-fpm.conf >/dev/null 2>&1; then
  if [ -e "$f.old" ]; then mv -f "$f.old" "$f"; else : > "$f"; fi
  exit 3
fi
rm -f "$f.old"
# Only PHP-FPM's master is signalled: a pid file left by one that exited may name another process.
pid=$(cat /tmp/php-fpm.pid 2>/dev/null) && grep -q php-fpm "/proc/$pid/cmdline" 2>/dev/null && kill -USR2 "$pid"
exit 0
`

/** Writes the site's variables for PHP in its running container (see PHP_ENV_WRITE); throws when it could not. */
export async function writePhpEnv(runtime: Pick<ContainerRuntime, 'exec'>, slug: string, values: Record<string, string>): Promise<{ left: string[] }> {
  const { text, left, plain } = phpPoolEnv(values)
  const result = await runtime.exec(slug, ['sh', '-c', PHP_ENV_WRITE, 'php-env', plain ? 'plain' : 'check'], { stdin: text, timeoutMs: 30_000 })
  // Its output is not repeated: a configuration error may quote a part of a value.
  if (result.exitCode !== 0) throw new Error(`could not hand PHP the site's variables (exit ${result.exitCode}${result.exitCode === 3 ? ': php-fpm -t refused the file, the previous one kept' : ''})`)
  return { left }
}
