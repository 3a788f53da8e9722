import { SITE_HOME } from '../../drivers/runtime/types'

/**
 * The rules of a path in a site's home (drivers/files/path.ts parsePath, which stays the
 * authority and names what is wrong), as one JSON Schema pattern for the document. Published as
 * `allOf` (checkedByService): the request validator compiles patterns without the `u` flag, and
 * one character of the rule (U+1F100) lies outside the Basic Multilingual Plane.
 * path-patterns.test.ts holds the pattern to parsePath on every code point and a table of paths.
 *
 * What JSON Schema cannot say: the limits are in UTF-8 bytes (4096 for the path, 255 for a name),
 * and the pattern counts characters, so a path of multi-byte characters within the character
 * limits can still be too long (422 naming the field, with the byte count).
 */

/** Longest path and name, in characters; the server's limits are these numbers in UTF-8 bytes. */
export const PATH_MAX_LENGTH = 4096
const NAME_MAX_LENGTH = 255

/**
 * Characters refused anywhere in a path: C0 and C1 controls, DEL, the line and paragraph
 * separators, surrogate code points (no UTF-8 text holds one), the backslash, and the
 * characters that look like `.`, `/` or `\` (path.ts LOOKALIKES, and every character whose NFKC
 * form holds one of the three). U+1F100 is written as itself: no escape of an astral character
 * reads the same in ECMA-262, Python and Rust.
 */
const REFUSED = '\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029\\uD800-\\uDFFF\\\\' +
  '\\u0338\\u0701\\u0702\\u1735\\u2024-\\u2026\\u2044\\u2100\\u2101\\u2105\\u2106\\u2215\\u2216\\u2488-\\u249B' +
  '\\u2571\\u2572\\u27CB\\u27CD\\u29F5\\u29F8\\u29F9\\u3002\\u33C2\\u33C7\\u33D8\\uA4F8\\uFE19\\uFE30\\uFE52\\uFE68' +
  '\\uFF0E\\uFF0F\\uFF3C\u{1F100}'

/**
 * A path relative to the home, after any prefix: not absolute, no `..` segment, no `~` as the
 * first name (empty and `.` segments are dropped first), no `%XX` sequence, no name over
 * NAME_MAX_LENGTH characters, and none of the REFUSED characters.
 */
const RELATIVE = `(?!/)(?!(?:\\.?/)*~(?:/|$))(?!(?:[^/]*/)*\\.\\.(?:/|$))(?![\\s\\S]*%[0-9A-Fa-f]{2})(?![\\s\\S]*[^/]{${NAME_MAX_LENGTH + 1}})[^${REFUSED}]*$`

/** A folder to list: relative to the site's home; '' (or '.') is the home itself. */
export const FILE_PATH_PATTERN = `^${RELATIVE}`

/**
 * A file or folder to read, write, upload, make or delete: as FILE_PATH_PATTERN, naming
 * something beneath the home (a name that is not '' or '.'), since none of these acts on the
 * home itself.
 */
export const ENTRY_PATH_PATTERN = `^(?=(?:[^/]*/)*(?!\\.?(?:/|$))[^/])${RELATIVE}`

/**
 * Exec's `cwd` (domain/exec/service.ts cwdOf): a path as the files API takes it, or the same
 * beneath `/home/site/` (the home itself is `/home/site`).
 */
export const CWD_PATTERN = `^(?:${SITE_HOME}(?:/|$))?${RELATIVE}`
