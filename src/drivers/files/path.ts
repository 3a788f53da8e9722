import { FileError } from './errors'

/** Longest path accepted, in UTF-8 bytes: Linux's PATH_MAX. */
export const MAX_PATH_BYTES = 4096
/** Longest single name, in UTF-8 bytes: Linux's NAME_MAX. */
export const MAX_NAME_BYTES = 255

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/

/**
 * Characters that look like `.`, `/` or `\` but that NFKC leaves alone (Unicode's confusables
 * list). Those whose NFKC form contains one of the three (U+FF0E, U+FF0F, U+2024, U+FE52...)
 * are caught by normalising instead.
 */
const LOOKALIKES = new Set([
  0x2215, 0x2044, 0x29f8, 0x2571, 0x1735, 0x27cb, 0x0338, // slash-like
  0x2216, 0x29f5, 0x29f9, 0x2572, 0x27cd, // backslash-like
  0x3002, 0x0701, 0x0702, 0xa4f8, // dot-like
])

const bad = (why: string): never => {
  throw new FileError('bad_path', `The path ${why}.`)
}

/**
 * Checks a path given to the files API and splits it into names, before anything touches the
 * disk. The rules (docs/api.md, "Files"):
 * - relative to the site's home; `''` (or `.`) is the home itself; a leading `/` is refused;
 * - empty and `.` segments are dropped (`public//a/./b/` is `public/a/b`);
 * - no `..` segment anywhere, even one that would stay inside the home: one rule that is easy
 *   to state and impossible to get wrong;
 * - no NUL or other control character, no backslash, at most 4096 bytes, names of at most 255;
 * - no `%XX` sequence: the API takes decoded paths, so `%2e%2e` is refused rather than taken
 *   literally, in case some layer in front of the caller would have decoded it;
 * - no Unicode look-alike of `.`, `/` or `\` (U+FF0E, U+FF0F, U+2215, U+2024...), which other
 *   tools may normalise into the real character.
 * Symlinks are the resolver's concern (`openBeneath`): this only sees the string.
 *
 * @example parsePath('public//css/./site.css') // ['public', 'css', 'site.css']
 */
export function parsePath(input: string): string[] {
  if (!input.isWellFormed()) bad('is not valid Unicode (it holds a lone surrogate)')
  const bytes = Buffer.byteLength(input, 'utf8')
  if (bytes > MAX_PATH_BYTES) bad(`is ${bytes} bytes long; paths are at most ${MAX_PATH_BYTES} bytes`)
  if (input.includes('\0')) bad('contains a NUL byte; send the path without it')
  if (CONTROL.test(input)) bad('contains a control character (newline, tab, escape...)')
  if (input.includes('\\')) bad('contains a backslash; separate folders with /')
  if (PERCENT_ESCAPE.test(input)) bad("contains a percent-encoded sequence such as %2e; the API takes decoded paths, so send the characters themselves (a literal '%' followed by two hex digits is not accepted)")
  for (const char of input) {
    const code = char.codePointAt(0)!
    if (code < 0x80) continue
    const folded = char.normalize('NFKC')
    if (LOOKALIKES.has(code) || /[./\\]/.test(folded)) bad(`contains '${char}' (U+${code.toString(16).toUpperCase().padStart(4, '0')}), which looks like '.', '/' or '\\'; use plain ASCII for those`)
  }
  if (input.startsWith('/')) bad("is absolute; paths are relative to the site's home, e.g. public/index.html")
  const names = input.split('/').filter((s) => s !== '' && s !== '.')
  if (names.includes('..')) bad("contains a '..' segment; paths are relative to the site's home and may not contain '..' at all")
  if (names[0] === '~') bad("starts with '~'; paths are already relative to the site's home, so drop the '~/'")
  for (const name of names) {
    if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) bad(`has a name longer than ${MAX_NAME_BYTES} bytes; shorten it (Linux allows no more)`)
  }
  return names
}
