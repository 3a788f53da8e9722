/** Characters a shell takes literally: an argument made only of these needs no quotes. */
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/

/**
 * An argv as one line a POSIX shell would split back into the same words: each argument as it is
 * when plain, else in single quotes (a quote inside as `'\''`); for the audit trail.
 *
 * @example commandLine(['sh', '-c', "echo 'hi'"]) // "sh -c 'echo '\''hi'\'''"
 */
export function commandLine(argv: readonly string[]): string {
  return argv.map((arg) => (PLAIN.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`)).join(' ')
}
