import { spawnSync } from 'bun'
import { chmodSync, existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startBerth, type Berth } from './helpers/binary'
import { startPebble, type Pebble } from './helpers/pebble'

/**
 * The files that hold Berth's secrets, on the compiled binary started as any hoster starts it
 * (this runner's umask, 022): the store (the portal's signing secret, key hashes) with its WAL
 * and shared memory, the ACME account key, and a certificate's key, issued by Pebble for the
 * sites domain's wildcard through Berth's own DNS (no site needed). berth.db used to be 0644.
 */
const SITES = 'secrets.test'
let pebble: Pebble
let berth: Berth
let tlsPort = 0
let root = ''

const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8).padStart(4, '0')
const secretFiles = () => {
  const d = berth.dataDir
  const tls = (sub: string) => readdirSync(join(d, 'tls', sub)).map((f) => join(d, 'tls', sub, f))
  return [join(d, 'berth.db'), join(d, 'berth.db-wal'), join(d, 'berth.db-shm'), ...tls('acme'), ...tls('certs')]
}
const modesOf = (files: string[]) => Object.fromEntries(files.map((f) => [f.slice(berth.dataDir.length + 1), modeOf(f)]))
const handshake = () =>
  spawnSync(['sh', '-c', `echo | openssl s_client -connect 127.0.0.1:${tlsPort} -servername any.${SITES} -CAfile ${root} -verify_return_error -verify_hostname any.${SITES} 2>&1`]).stdout.toString()

beforeAll(async () => {
  const [port, dnsPort] = [await freePort(), await freePort()]
  tlsPort = await freePort()
  pebble = await startPebble({ httpPort: port, dnsServer: `127.0.0.1:${dnsPort}` })
  berth = await startBerth({
    port,
    env: {
      BERTH_SITES_DOMAIN: SITES, BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_TLS_LISTEN: `127.0.0.1:${tlsPort}`, BERTH_TLS_WILDCARD: 'true',
      BERTH_TLS_ACME_DIRECTORY: pebble.directoryUrl, BERTH_TLS_ACME_EMAIL: 'hoster@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true',
      BERTH_TLS_CA_BUNDLE: pebble.caBundleFile, BERTH_TLS_PREFLIGHT_RESOLVER: `127.0.0.1:${dnsPort}`,
    },
  })
  root = join(mkdtempSync(join(tmpdir(), 'berth-secrets-')), 'root.pem')
  writeFileSync(root, await pebble.rootPem())
  for (const deadline = Date.now() + 30_000; !berth.output().includes('"certificate issued"'); await Bun.sleep(200)) {
    if (Date.now() > deadline) throw new Error(`no certificate within 30 s:\n${berth.output().slice(-3000)}`)
  }
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
  await pebble?.stop()
})

describe('secrets at rest', () => {
  it('after a fresh start and a certificate: the store, its -wal and -shm, the ACME account key and the certificate key are 0600', () => {
    const files = secretFiles()
    const names = files.map((f) => f.slice(berth.dataDir.length + 1))
    expect(names).toEqual(expect.arrayContaining(['berth.db', 'berth.db-wal', 'berth.db-shm', 'tls/acme/account.key']))
    expect(names.filter((n) => /^tls\/certs\/.+\.key$/.test(n))).toHaveLength(1)
    expect(modesOf(files)).toEqual(Object.fromEntries(names.map((n) => [n, '0600'])))
  })

  it('a widened file is set back to 0600 at the next start, with a warning naming it; Berth serves as before', async () => {
    // kill -9 leaves the -wal and -shm files behind, as a crash or a power loss would.
    await berth.kill9()
    const key = secretFiles().find((f) => f.endsWith('.key') && f.includes('/certs/'))!
    const widened = [join(berth.dataDir, 'berth.db'), join(berth.dataDir, 'berth.db-wal'), join(berth.dataDir, 'tls', 'acme', 'account.key'), key]
    for (const f of widened) {
      expect(existsSync(f), f).toBe(true)
      chmodSync(f, 0o644)
    }
    await berth.restart()
    const warnings = berth.output().split('\n').filter((l) => l.includes('holds secrets')).map((l) => JSON.parse(l))
    expect(warnings.map((w) => [w.level, w.file, w.was])).toEqual(widened.map((f) => ['warn', f, '0644']))
    expect(warnings[0].msg).toBe(`${widened[0]} holds secrets and was mode 0644 (others could read it); Berth set it to 0600`)
    expect(Object.values(modesOf(secretFiles()))).toEqual(secretFiles().map(() => '0600'))
    expect(handshake()).toMatch(/Verify return code: 0 \(ok\)/)
  }, 30_000)
})
