/**
 * Reading a regular expression's text, for the document's patterns (openapi.ts): JSON Schema
 * patterns are ECMA-262, and the document's readers also use Python's `re` (Schemathesis,
 * hypothesis-jsonschema) and Rust's engines, which read a few things differently.
 */

/** The branches of a pattern's top-level alternation (`a|b` inside a group or class stays whole). */
export function topLevelBranches(pattern: string): string[] {
  const branches: string[] = []
  let depth = 0
  let inClass = false
  let start = 0
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\') {
      i++
      continue
    }
    if (inClass) {
      if (c === ']') inClass = false
      continue
    }
    if (c === '[') inClass = true
    else if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === '|' && depth === 0) {
      branches.push(pattern.slice(start, i))
      start = i + 1
    }
  }
  branches.push(pattern.slice(start))
  return branches
}

/** Whether `branch` ends with an unescaped `$`. */
export const endsWithAnchor = (branch: string) => /(?:^|[^\\])(?:\\\\)*\$$/.test(branch)

/** The guard that makes `$` the end of the value in every engine (see endOfValue). */
export const END_GUARD = '(?!\\n)'

/**
 * The pattern with each top-level branch's final `$` made the end of the value for Python too:
 * Python's `$` also matches before a final newline, so `^[a-z]+$` takes "shop\n", which the
 * server (ECMA-262, where `$` is the end) refuses. `$(?!\n)` reads the same in ECMA-262.
 */
export function endOfValue(pattern: string): string {
  const branches = topLevelBranches(pattern)
  if (!branches.some(endsWithAnchor)) return pattern
  return branches.map((b) => (endsWithAnchor(b) ? `${b}${END_GUARD}` : b)).join('|')
}
