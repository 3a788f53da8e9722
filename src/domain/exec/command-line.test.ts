import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { commandLine } from './command-line'

describe('commandLine', () => {
  it('leaves plain words as they are and quotes the rest so that sh splits it back the same', () => {
    expect(commandLine(['php', '-v'])).toBe('php -v')
    const argv = ['sh', '-c', "echo 'it''s' $HOME; exit 3", '', 'a b', 'tab\there', 'é']
    const line = commandLine(argv)
    // sh itself reads the line back into the same words.
    const back = spawnSync('sh', ['-c', `for a in ${line}; do printf '%s\\0' "$a"; done`]).stdout.toString().split('\0').slice(0, -1)
    expect(back).toEqual(argv)
  })
})
