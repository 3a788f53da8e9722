import { describe, expect, it } from 'vitest'
import { DomainError } from '../errors'
import { checkDbName, newPassword, urlOf, variableOf } from './rules'

describe('database rules', () => {
  it('passwords are 32 characters of [A-Za-z0-9], each new, every character drawn', () => {
    const seen = new Set<string>()
    const chars = new Set<string>()
    for (let i = 0; i < 500; i++) {
      const p = newPassword()
      expect(p).toMatch(/^[A-Za-z0-9]{32}$/)
      seen.add(p)
      for (const c of p) chars.add(c)
    }
    expect(seen.size).toBe(500)
    expect(chars.size).toBe(62)
  })

  it('names: 1 to 31 lowercase letters, digits and _, starting with a letter; database reserved', () => {
    for (const ok of ['a', 'main', 'wp_2', 'a'.repeat(31)]) expect(() => checkDbName(ok)).not.toThrow()
    for (const bad of ['', 'A', 'Main', '1a', '_a', 'a-b', 'a b', 'a'.repeat(32), 'é', 'database', 'main\n']) {
      const err = (() => {
        try {
          checkDbName(bad)
        } catch (e) {
          return e
        }
      })()
      expect(err, JSON.stringify(bad)).toBeInstanceOf(DomainError)
      expect((err as DomainError).field).toBe('name')
    }
  })

  it('URLs and variable names per engine', () => {
    expect(urlOf('postgres', 'main', 'PW')).toBe('postgres://site:PW@db-main:5432/main')
    expect(urlOf('mariadb', 'wp', 'PW')).toBe('mysql://site:PW@db-wp:3306/wp')
    expect(urlOf('redis', 'cache', 'PW')).toBe('redis://site:PW@db-cache:6379/0')
    expect(variableOf('wp_2')).toBe('WP_2_URL')
  })
})
