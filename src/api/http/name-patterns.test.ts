import { describe, expect, it } from 'vitest'
import { IDN_PUNCTUATION } from './name-patterns'

describe('IDN_PUNCTUATION', () => {
  it('is every character outside ASCII whose NFKC form holds ASCII other than a letter, digit or hyphen', () => {
    const listed = new RegExp(`[${IDN_PUNCTUATION}]`, 'u')
    const differ: string[] = []
    for (let code = 0xa1; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue
      const char = String.fromCodePoint(code)
      const punctuation = /[\x00-,./:-@[-`{-\x7f]/.test(char.normalize('NFKC'))
      if (listed.test(char) !== punctuation) differ.push(`U+${code.toString(16).toUpperCase()}`)
    }
    expect(differ).toEqual([])
  })
})
