import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../test/helpers/home-runtime'
import { inProcess } from '../../test/helpers/in-process'
import { anchored, codePoints, OpenApiDoc, python, type CodePoints } from '../../test/helpers/openapi-doc'
import { parsePublicKey } from '../domain/ssh/public-key'

/**
 * The API description states every rule the server enforces, as the readers of the document
 * read it (issue 36, item 9: what Schemathesis found). Each pattern is a regular expression
 * Python's `re` compiles (Schemathesis and hypothesis-jsonschema use it) and is anchored; and on
 * each table below three verdicts agree: the server's (the in-process app), the JSON Schema
 * validator's (ajv, ECMA-262 with the `u` flag) and Python's (the pattern over code points,
 * lengths in code points, `format` not consulted).
 */
const runtime = new HomeRuntime()
const h = inProcess({ runtime })
afterAll(async () => {
  await h.close()
  runtime.close()
})

type Schema = Record<string, any>

/** RSA public keys made once by ssh-keygen (making them here takes seconds); their blobs end without padding, with '=' and with '=='. */
const RSA = {
  rsa1024: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCvcBU292JKgQJNLIOLS2WviR7XiByesv7bWBvkzuYdKoSqTvhclSd8hGBOR6hIhLEsAfc0y0FU1R6DsFwO2dXWR02f0XcWG8zDzE77lhcve9mO1QJ2bABATdVV32rteuj5yNZcvfyV6R5vN5cN0ALhk7odJati3SJsR8GisocEmQ== fixture-1024@example.com',
  rsa2048: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCsbn7bZvv5TuNDOtAnE1fFOFx58+JXH7XZtiUFplxdmjz1qyN8/AgM6fQa5ArVbT/7Tm9YdibZq4J4qUm3hmMG3X9vSbH2h82w4jsOkYcNWH2rq7XsQVo0ShsabLUrydjTfCJnZ24SYIuFxufjKrasU8bchEgFvSWujMdd7Vw9xOIQmK5Fs5aUYpgaJ50WPcged3cAvzuZac6yHTwK3YiUtW9k3eCqqY+sATFxf0qdzeNU760YxaV2jgpwiwYVVj5kK2tLu378V9TI9JFCw8JyFz5sO525noxQXcIBECO5IOVyctMl0/0DOAdjQfIfboMmzv5RU7/AOn060zATVYWV fixture-2048@example.com',
  rsa3072: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQD7F1ur7RCeNCcZXqIiJpyOmgZG/kEnEMiYQ+jqnkeAO+HLllWHWfj/7IBKcd3lWlln6ZvxXdhVNASAJWzDzZ3/zLg6p2QP9wPAytSUei2aSzcROxgv1v3w8gZscSFaU6TsWNkzaGnWUf8aFubqtb1gSSyKNt+9i2pEI/3F3P3ORlJBtxpZ24Bd8GQGAv8kt3VHwbymgl/h8GaJLYtVEEMy4IY+nGuFsfK71zNMrngHpZxNNzyUbE5J+SKNqaJCejvfQ+nN4gjJByjuDZ3Ft3TELqOQQTf9fuEP7ciJ5jHUf7O4WjQzEIG18xDaXDNvb+iNntj3BLxKw6xNJI66tPFdzb4Tg9lL7N46sZtnVRRz5OmPdHlG7bhzQi2z6vph7zXIfzOn3ob0pZVdYow32qJs8I+CqMd9ifa6QcgB/nQNOeF6dlNzaH0hHScxqUhgLqmmIYgnfEphtGvYpaGeMjRGNQclqfuCtqI/TzmHW7/FS7MsKQKM14FFU0Qb38DCtUU= fixture-3072@example.com',
  rsa4096: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAACAQCqeNXUrhqSrxsYnuuQxRYV8jwaU3OdVBVeDQIWJPNeVUEdk0kheVP6ustKfUp10cGsOz0ZwSQ316sezRMsmUEZunrCJXTly0zU9hlINHD5vXu37Wpq5FoHROH9eZnfX6ScTdeJWnm5tMmJLnfkN7I53snsrUrTZ43ilyO26kOjft7vJ8f72UxczEgQIqb1/lgRSaIJdxVt4EgAmncC7UxoCK30cyjke4Bnnspbwp1kgQkQp68MvGHlzMtiGOkhwQKaw47+ISVGdXCm3TwKluvV8+b0+GLWgULXyqTWpjSKToD2MufpSBmcN20+PkYEc/jNRBZsY36WD98Rhlujlpk0zsuWh8R6IJ+wAfDWOFt1odRxxnS1P+S16gXbtDBP6dUbooFIpnVyez5XJa0Z0jvOgnkb/ED7iIZkaw00Jf9PyloXaeV/4thW0g8j01j6F6jUffM6ue/3WEv5rkPdLp0UlB1TxeOsD+INYLRG/E16zZ2LK29ofc/HTvqGL+93I4C75+uFIIxM7jK6NRvcNV8/I20uYw9hZgvFEnG2IA7daOi7ETjVat6x+DeEt3HVNAHijfQPgpLe/my4LFGGsIaxg6kpM44ciEOw9KUQl+TcMdNVUfHwslGZ449r5SVuSuFV/TlUvLPjKp4IxZY8IbRmUhkxcJf75rd9Hr2F76emTQ== fixture-4096@example.com',
}
let api: OpenApiDoc
let site: { slug: string; key: string }
const V1 = '/api/v1'

beforeAll(async () => {
  api = new OpenApiDoc((await h.call('GET', `${V1}/openapi.json`)).json)
  site = await buyInProcess(h, 'svc_business_monthly', 'pat')
}, 60_000)

/** Checks the three verdicts on each row: [value, accepted]. `server` says whether the server took it. */
async function expectAgreement(schema: Schema, document: (value: string) => boolean, server: (value: string) => Promise<boolean>, rows: [string | CodePoints, boolean][]) {
  const strings = rows.filter(([v]) => typeof v === 'string') as [string, boolean][]
  const py = python([], rows.map(([v]) => [schema, typeof v === 'string' ? codePoints(v) : v]))
  const wrong: string[] = []
  for (const [i, [value, ok]] of rows.entries()) {
    const label = JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value)
    if (py.verdicts[i] !== ok) wrong.push(`${label}: Python's re says ${py.verdicts[i]}, want ${ok}`)
    if (typeof value !== 'string') continue
    if (document(value) !== ok) wrong.push(`${label}: the document (ajv) says ${!ok}, want ${ok}`)
    if ((await server(value)) !== ok) wrong.push(`${label}: the server says ${!ok}, want ${ok}`)
  }
  expect(strings.length).toBeGreaterThan(0)
  expect(wrong).toEqual([])
}

describe('every pattern of the document', () => {
  it("compiles with Python's re, without a warning, and with the u flag", () => {
    const patterns = [...new Set(api.patterns().map((p) => p.pattern))]
    expect(patterns.length).toBeGreaterThan(15)
    expect(python(patterns).errors).toEqual({})
    for (const p of patterns) expect(() => new RegExp(p, 'u'), p).not.toThrow()
  })

  it('is anchored: each branch judges the whole value (^ ... $), never a part of it, in Python too', () => {
    const loose = api.patterns().filter((p) => !anchored(p.pattern)).map((p) => `${p.at}: ${p.pattern.slice(0, 100)}`)
    expect([...new Set(loose)]).toEqual([])
    // Python's `$` also matches before a final newline: each example with a newline after it
    // is refused there, as the server refuses it.
    const examples = api.patterns().flatMap((p) => p.examples.filter((e): e is string => typeof e === 'string').map((e) => [p.pattern, e] as const))
    expect(examples.length).toBeGreaterThan(5)
    const verdicts = python([], examples.flatMap(([pattern, e]) => [[{ pattern }, codePoints(e)], [{ pattern }, codePoints(`${e}\n`)]])).verdicts
    expect(verdicts).toEqual(examples.flatMap(() => [true, false]))
  })
})

describe('rules the server enforces, as the document states them', () => {
  it('plain text: any printable character, emoji included, and no control character or surrogate code point, paired or not', async () => {
    const schema = api.bodyField('createKey', 'name')
    await expectAgreement(schema, (v) => api.acceptsBody('createKey', { name: v, scopes: ['read'] }), async (v) => {
      const res = await h.call('POST', `${V1}/keys/create/`, { key: site.key, body: { name: v, scopes: ['read'] } })
      return res.status === 201
    }, [
      ['déploiement 🚀 #2', true], ['日本語', true], ['a\u00a0b', true], ['a\u0000b', false], ['a\tb', false], ['a\u001bb', false], ['a\u0085b', false], ['a\u007fb', false], ['a\ud800b', false],
      // What no JSON text decodes to: surrogate code points (Python holds them, and generators
      // made from the pattern produce them). A pattern with a branch for pairs matched these.
      [[0x61, 0xd83d, 0xde80], false], [[0xdc00], false], [[0x1f680], true],
      // Lengths in characters, as JSON Schema counts them: an emoji is one (two UTF-16 code units).
      ['🚀'.repeat(100), true], ['🚀'.repeat(101), false], ['é'.repeat(100), true], ['', false],
    ])
  })

  it('email: the rule the server applies (a dot-atom @ a domain of two labels or more), stricter than format: email', async () => {
    const schema = api.bodyField('updateAccount', 'email')
    expect(schema.pattern).toBeDefined()
    await expectAgreement(schema, (v) => api.acceptsBody('updateAccount', { email: v }), async (v) => {
      const res = await h.call('POST', `${V1}/account/update/`, { key: site.key, body: { email: v } })
      if (res.status !== 200) expect(res.json.error, v).toMatchObject({ code: 'VALIDATION_ERROR', param: 'email' })
      return res.status === 200
    }, [
      ['ada@example.com', true], ['Ada.Lovelace+tag@Mail.Example.CO', true], ["o'brien!#$%&*/=?^_`{|}~-@x-1.example.org", true],
      ['a@b', false], ['"quoted"@example.com', false], ['"a b"@example.com', false], ['a@[192.0.2.1]', false], ['a@[IPv6:2001:db8::1]', false],
      ['ü@example.com', false], ['ada@exämple.com', false], ['a..b@example.com', false], ['.a@example.com', false], ['a@-example.com', false],
      ['a@example.com\n', false], ['a b@example.com', false], ['@example.com', false], ['ada@', false],
    ])
    // The document's other email fields state the same rule.
    for (const [id, field] of [['register', 'email'], ['updateCheckout', 'buyer_email']] as const) expect(api.bodyField(id, field).pattern, id).toBe(schema.pattern)
  })

  it('domain names: an internationalised name is taken whole or refused whole', async () => {
    const schema = api.parameter('searchDomains', 'domain')
    await expectAgreement(schema, (v) => api.ajv.validate(schema, v) as boolean, async (v) => {
      const res = await h.call('GET', `${V1}/domains/search/?domain=${encodeURIComponent(v)}`, { key: site.key })
      if (res.status !== 200) expect(res.json.error, v).toMatchObject({ param: 'domain' })
      return res.status === 200
    }, [
      ['bücher.de', true], ['日本.jp', true], ['Bücher.DE.', true], ['bücher.рф', true], ['xn--bcher-kva.de', true], ['example.com', true],
      ['ex ample.cöm', false], ['bücher', false], ['bücher.c0m', false], ['-bücher.de', false], ['bücher..de', false], ['bücher.de/path', false],
      ['https://bücher.de', false], ['bücher.de:80', false], ['ü\u3000.de', false],
    ])
  })

  it('SSH keys: each type with a blob of that type and length; `ssh-ed25519 0` is no key', async () => {
    const schema = { ...api.bodyField('addSshKey', 'public_key') }
    const dir = mkdtempSync(join(tmpdir(), 'berth-keys-'))
    const generated = (type: string, bits?: number) => {
      const file = join(dir, `${type}${bits ?? ''}`)
      const run = spawnSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', 'me@laptop', '-f', file])
      if (run.status !== 0) throw new Error(`ssh-keygen: ${run.stderr}`)
      return readFileSync(`${file}.pub`, 'utf8').trim()
    }
    const keys = { ed25519: generated('ed25519'), p256: generated('ecdsa', 256), p384: generated('ecdsa', 384), p521: generated('ecdsa', 521), ...RSA }
    rmSync(dir, { recursive: true, force: true })
    const blob = (line: string) => line.split(' ')[1]!
    const server = async (line: string) => {
      try {
        parsePublicKey(line)
        return true
      } catch {
        return false
      }
    }
    await expectAgreement(schema, (v) => api.acceptsBody('addSshKey', { public_key: v }), server, [
      [keys.ed25519, true], [keys.p256, true], [keys.p384, true], [keys.p521, true], [keys.rsa2048, true], [keys.rsa3072, true], [keys.rsa4096, true],
      [`no-pty,from="10.0.0.1" ${keys.ed25519}`, true], [`${keys.ed25519}\n`, true], [`ssh-ed25519 ${blob(keys.ed25519)}`, true],
      ['ssh-ed25519 0', false], ['ssh-ed25519 AAAA', false], ['ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 user@host', false],
      [`ssh-rsa ${blob(keys.ed25519)}`, false], [`ssh-ed25519 ${blob(keys.p256)}`, false], [`ecdsa-sha2-nistp384 ${blob(keys.p256)}`, false],
      [`ssh-ed25519 ${blob(keys.ed25519).slice(0, -4)}`, false], [`ssh-ed25519 ${blob(keys.ed25519)}AAAA`, false], [`ssh-ed25519 ${blob(keys.ed25519)}=`, false],
      [keys.rsa1024, false], [`ssh-rsa ${blob(keys.rsa2048).slice(0, 300)}`, false],
    ])
    // The route says the same as the parser it calls.
    const res = await h.call('POST', `${V1}/sites/${site.slug}/ssh/keys/`, { key: site.key, body: { public_key: 'ssh-ed25519 0' } })
    expect({ status: res.status, param: res.json.error?.param }).toEqual({ status: 422, param: 'public_key' })
  })

  it("file paths: relative to the home, no '..', no '%XX', no control character, backslash or look-alike of '.', '/', '\\'", async () => {
    const schema = api.bodyField('makeDirectory', 'path')
    let n = 0
    await expectAgreement(schema, (v) => api.acceptsBody('makeDirectory', { path: v }), async (v) => {
      // Each accepted path a folder of its own, under a fresh one: names stay what the row says.
      const res = await h.call('POST', `${V1}/sites/${site.slug}/files/mkdir/`, { key: site.key, body: { path: v.startsWith('public/') ? v.replace('public/', `public/r${++n}/`) : v } })
      if (res.status !== 200) expect(res.json.error, v).toMatchObject({ code: 'VALIDATION_ERROR', param: 'path' })
      return res.status === 200
    }, [
      ['public/a', true], ['public/a b', true], ['public/ünï', true], ['public/~x', true], ['public/100%', true], ['public/a%zz', true], ['public/a..b', true],
      ['public/.../x', true], ['public//a/./b/', true], ['public/...', true],
      // Every route but the listing names something beneath the home, never the home itself.
      ['', false], ['.', false], ['./', false], ['/', false], [`public/${'n'.repeat(255)}`, true],
      ['/public', false], ['public/../x', false], ['..', false], ['public/..', false], ['a\\b', false], ['public/%2e', false], ['public/a%2Fb', false],
      ['~/public', false], ['./~', false], ['~', false], ['public/a\tb', false], ['public/a\u2028b', false], ['public/a\u0085b', false],
      ['public/a\uff0eb', false], ['public/a\u2024b', false], ['public/a\u2215b', false], ['public/\u{1f100}', false], ['public/a\ud800', false],
      [`public/${'n'.repeat(256)}`, false], [[0x70, 0xd83d, 0xde00], false],
    ])
  })

  it("exec's cwd: a folder of the home, relative or beneath /home/site", async () => {
    const schema = api.bodyField('execCommand', 'cwd')
    await expectAgreement(schema, (v) => api.acceptsBody('execCommand', { command: ['true'], cwd: v }), async (v) => {
      const res = await h.call('POST', `${V1}/sites/${site.slug}/exec/`, { key: site.key, body: { command: ['true'], cwd: v } })
      return !(res.status === 422 && res.json.error.param === 'cwd')
    }, [
      ['public', true], ['', true], ['/home/site', true], ['/home/site/', true], ['/home/site/public', true], ['public/', true], ['./public', true],
      ['/etc', false], ['/home/siteX', false], ['/home/site//public', false], ['/home/site/../site', false], ['../x', false], ['public/..', false],
      ['pub\\lic', false], ['~', false], ['/home/site/~', false], ['public%2F', false], ['/', false],
    ])
  })
})
