/**
 * An argv as one command line a POSIX shell would split back into the same words: a word of
 * plain characters as it is, any other in single quotes (a quote inside as `'\''`), an empty
 * word as `''`. What the audit trail records of a command given as an argv.
 *
 * @example commandLineOf(['sh', '-c', "echo 'hi' > x"]) // => sh -c 'echo '\''hi'\'' > x'
 */
export function commandLineOf(argv: readonly string[]): string {
  return argv.map(quoteWord).join(' ')
}

/** Characters no POSIX shell gives a meaning to in a word (outside the first position, `=` and `~` neither). */
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/

function quoteWord(word: string): string {
  if (PLAIN.test(word)) return word
  return `'${word.replaceAll("'", `'\\''`)}'`
}
