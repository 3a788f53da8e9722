/** What a secret's value is replaced with in a deployment's output and in the logs. */
export const SECRET_MASK = '[secret]'

/** Values this long or longer are masked wherever they appear (docs/api.md, "Settings and secrets"). */
export const REDACT_ANYWHERE_CHARS = 6

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * `text` with every secret value replaced by SECRET_MASK: for the build's output kept in a
 * deployment and the lines the logs API returns.
 *
 * - A value of 6 characters or more is masked wherever it appears, the longest first (so a value
 *   holding another is masked whole); a value of several lines (a PEM key) also line by line, since
 *   logs are read a line at a time.
 * - A shorter value would mask every "1234" or "true" of the output: it is masked only where it
 *   stands as an assignment's value, after `=` or `:` (optionally a space and a quote) and up to a
 *   character that cannot be part of it (`PIN=1234`, `"pin": "1234"`).
 * - Empty values are never masked. Encoded forms (URL-encoded, base64) are not recognised: a
 *   program that prints its secret encoded leaks it as it would anywhere else.
 */
export function redact(text: string, secrets: readonly string[]): string {
  if (text === '' || secrets.length === 0) return text
  const long = new Set<string>()
  const short = new Set<string>()
  for (const secret of secrets) {
    for (const part of [secret, ...(secret.includes('\n') ? secret.split(/\r?\n/).map((l) => l.trim()) : [])]) {
      if (part === '') continue
      ;([...part].length >= REDACT_ANYWHERE_CHARS ? long : short).add(part)
    }
  }
  let out = text
  if (long.size > 0) {
    const anywhere = new RegExp([...long].sort((a, b) => b.length - a.length).map(escape).join('|'), 'g')
    out = out.replace(anywhere, SECRET_MASK)
  }
  if (short.size > 0) {
    const values = [...short].sort((a, b) => b.length - a.length).map(escape).join('|')
    const assigned = new RegExp(`([=:][ \\t]?["']?)(?:${values})(?![A-Za-z0-9_\\-.+/])`, 'g')
    out = out.replace(assigned, `$1${SECRET_MASK}`)
  }
  return out
}
