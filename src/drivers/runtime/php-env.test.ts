import { describe, expect, it } from 'vitest'
import { phpPoolEnv } from './php-env'

/** The pool file's text (the e2e, test/apps-push.e2e.test.ts, shows PHP reading it through php-fpm). */
describe('phpPoolEnv', () => {
  it('writes each variable as a double-quoted env[] line, \\ " and $ escaped, sorted by name', () => {
    expect(phpPoolEnv({ B: 'plain', A: 'say "hi" to $HOME ${X} \\ end' }).text).toBe(
      "; The site's settings and secrets for PHP-FPM (written by Berth; see docs/api.md).\n[site]\n"
      + 'env[A] = "say \\"hi\\" to \\$HOME \\${X} \\\\ end"\nenv[B] = "plain"\n',
    )
  })

  it('leaves out what php-fpm cannot carry: a line break, an empty value, a leading $', () => {
    const { text, left } = phpPoolEnv({ PEM: 'a\nb', CR: 'a\rb', EMPTY: '', DOLLAR: '$2y$10$abc', OK: 'x$' })
    expect(left.sort()).toEqual(['CR', 'DOLLAR', 'EMPTY', 'PEM'])
    expect(text).toContain('env[OK] = "x\\$"\n')
    expect(text).not.toMatch(/PEM|EMPTY|DOLLAR|env\[CR\]/)
  })

  it('says a file is plain (no php-fpm -t before its reload) only when every value written means nothing but itself', () => {
    expect(phpPoolEnv({ DATABASE_URL: 'postgres://site:Zx4S0o9fTq2m7LwB1yQe5cVh8kNa3rJd@db-main:5432/main', N: '42', T: 'a b,c~d+e%20' }).plain).toBe(true)
    for (const odd of ['say "hi"', 'C:\\dir', 'x$', 'a${X}', 'a{b}', "it's", 'a;b', 'tab\tx', 'ü']) expect(phpPoolEnv({ OK: 'plain', ODD: odd }).plain, odd).toBe(false)
    // A value left out (a line break) does not count: it is not in the file.
    expect(phpPoolEnv({ PEM: 'a\nb', OK: 'plain' }).plain).toBe(true)
  })
})
