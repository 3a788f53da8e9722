import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { commandLineOf } from './command-line'

describe('commandLineOf', () => {
  it('leaves plain words as they are and quotes the rest so that sh splits it back the same', () => {
    expect(commandLineOf(['php', '-v'])).toBe('php -v')
    const argv = ['sh', '-c', "echo 'it''s' $HOME; exit 3", '', 'a b', 'tab\there', 'é']
    const line = commandLineOf(argv)
    // sh itself reads the line back into the same words.
    const back = spawnSync('sh', ['-c', `for a in ${line}; do printf '%s\\0' "$a"; done`]).stdout.toString().split('\0').slice(0, -1)
    expect(back).toEqual(argv)
  })
  it.each([
    [['php', '-v'], 'php -v'],
    [['sh', '-c', 'id -u; echo $HOME'], "sh -c 'id -u; echo $HOME'"],
    [['echo', "it's", ''], "echo 'it'\\''s' ''"],
    [['ls', '/home/site/a=b,c:d@e%f+g'], 'ls /home/site/a=b,c:d@e%f+g'],
  ])('%j reads %s', (argv, line) => {
    expect(commandLineOf(argv)).toBe(line)
  })
})
