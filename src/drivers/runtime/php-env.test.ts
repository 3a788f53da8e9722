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
})
