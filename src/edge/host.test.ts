import { describe, expect, it } from 'vitest'
import { parseSiteHost } from './host'

describe('parseSiteHost', () => {
  it.each([
    ['myslug.localhost', 'myslug'],
    ['myslug.localhost:8080', 'myslug'],
    ['MySlug.LocalHost:8080', 'myslug'],
    ['myslug.localhost.', 'myslug'],
    ['my-site-2.localhost', 'my-site-2'],
    ['a1b.sites.example.com', null],
    ['abc.sites.example.com:443', null],
  ])('%s under localhost → %s', (host, slug) => {
    expect(parseSiteHost(host, 'localhost')).toBe(slug)
  })

  it.each([
    ['abc.sites.example.com', 'abc'],
    ['ABC.Sites.Example.COM:443', 'abc'],
    ['x.abc.sites.example.com', null],
    ['sites.example.com', null],
    ['abcsites.example.com', null],
  ])('%s under sites.example.com → %s', (host, slug) => {
    expect(parseSiteHost(host, 'Sites.Example.com.')).toBe(slug)
  })

  it.each([
    ['', 'empty'],
    ['localhost', 'the bare domain'],
    ['localhost:8080', 'the bare domain with a port'],
    ['.localhost', 'an empty label'],
    ['a.b.localhost', 'a nested subdomain'],
    ['www.myslug.localhost', 'a nested subdomain of a valid slug'],
    ['ab.localhost', 'a slug under 3 characters'],
    [`${'a'.repeat(51)}.localhost`, 'a slug over 50 characters'],
    ['-abc.localhost', 'a leading hyphen'],
    ['abc-.localhost', 'a trailing hyphen'],
    ['ab_c.localhost', 'an underscore'],
    ['abc.localhost:http', 'a port that is not a number'],
    ['abc.localhost:', 'an empty port'],
    ['[::1]:8080', 'an IPv6 literal'],
    ['abc.localhostx', 'a different domain'],
    ['abc.xlocalhost', 'a domain that only ends like it'],
  ])('rejects %j (%s)', (host) => {
    expect(parseSiteHost(host, 'localhost')).toBeNull()
  })
})
