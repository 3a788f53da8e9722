import { describe, expect, it } from 'vitest'
import { FileError } from '../../drivers/files/errors'
import { parsePath } from '../../drivers/files/path'
import { ENTRY_PATH_PATTERN, FILE_PATH_PATTERN } from './path-patterns'

/**
 * The published path patterns say what parsePath (the authority) says, character by character:
 * every code point in a name, as JSON Schema validators read the pattern (`u` flag).
 */
const accepts = (path: string) => {
  try {
    parsePath(path)
    return true
  } catch (err) {
    if (!(err instanceof FileError)) throw err
    return false
  }
}

describe('the file path patterns', () => {
  it('refuse exactly the characters parsePath refuses, over every code point', () => {
    const pattern = new RegExp(FILE_PATH_PATTERN, 'u')
    const differ: string[] = []
    for (let code = 0; code <= 0x10ffff; code++) {
      // A lone surrogate: both refuse it (no UTF-8 text holds one), checked below as a string.
      if (code >= 0xd800 && code <= 0xdfff) continue
      const path = `public/a${String.fromCodePoint(code)}b`
      if (pattern.test(path) !== accepts(path)) differ.push(`U+${code.toString(16).toUpperCase().padStart(4, '0')}`)
    }
    expect(differ).toEqual([])
    expect(pattern.test('public/a\ud800b')).toBe(false)
    expect(accepts('public/a\ud800b')).toBe(false)
  })

  it('an entry is something beneath the home: not the home itself', () => {
    const entry = new RegExp(ENTRY_PATH_PATTERN, 'u')
    const listing = new RegExp(FILE_PATH_PATTERN, 'u')
    for (const home of ['', '.', './', './/./']) {
      expect(listing.test(home), home).toBe(true)
      expect(entry.test(home), home).toBe(false)
      expect(parsePath(home), home).toEqual([])
    }
    for (const named of ['a', './a', 'public/', '...', '.a', 'a/.']) {
      expect(entry.test(named), named).toBe(true)
      expect(parsePath(named).length, named).toBeGreaterThan(0)
    }
  })
})
