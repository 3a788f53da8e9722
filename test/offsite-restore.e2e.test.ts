import { spawn, spawnSync } from 'bun'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, freePort, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import type { OffsiteManifest } from '../src/domain/offsite/manifest'
import { ageKeyPair, latestManifest } from './helpers/age-keys'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { tarGz } from './helpers/trees'
import { docker, instanceOf, removeSitesOf, siteShell } from './helpers/sites'

/**
 * THE DRILL (issue 25): the box is lost and rebuilt from its copies off the box with one command.
 * Three sites on three plans (shared, vps, dedicated) with files, DNS records, a registered and
 * linked domain, backups, snapshots and an SSH key; a copy in a file:// bucket; then Berth stopped,
 * every container, volume and network of this instance removed and the data folder deleted;
 * `berth restore`; `berth serve`: every site active and serving the same bytes through the edge,
 * the same files with their owners and modes, the same API keys, the same DNS answers, and SSH
 * with the injected key and the same host key.
 *
 * The bucket is written by Berth itself (offsite.url a file:// folder): `berth offsite push`
 * copies what is pending, and the store is copied once more as Berth stops.
 */
const scratch = mkdtempSync(join(tmpdir(), 'berth-drill-'))
const dataDir = join(scratch, 'data')
const bucket = join(scratch, 'bucket')
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
/** Every file of the home but the logs, with its owner, mode and SHA-256; links with their target (busybox and GNU alike). */
const FINGERPRINT = 'find . -path ./logs -prune -o -print | sort | while read -r f; do if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; elif [ -f "$f" ]; then echo "$(stat -c "%U:%G %a" "$f") $(sha256sum "$f")"; else echo "$(stat -c "%U:%G %a" "$f") $f/"; fi; done'
const PLANS = ['svc_starter_monthly', 'svc_business_monthly', 'svc_performance_monthly']
/**
 * The dedicated site runs an app (issue 39): its releases are in the home, so in the copy; its
 * web answers /berth-app with its release and settings, and serves the home's public/ otherwise.
 */
const DRILL_APP = {
  'berth.json': JSON.stringify({ runtime: 'node', install: null, processes: { web: 'node server.js' } }),
  'server.js': `const fs = require('fs'), path = require('path')
require('http').createServer((req, res) => {
  const p = new URL(req.url, 'http://x').pathname
  if (p === '/berth-app') return res.end('app ' + process.env.BERTH_RELEASE + ' ' + process.env.GREETING + ' ' + (process.env.API_TOKEN || '').length)
  fs.readFile(path.join('/home/site/public', path.normalize(p)), (err, data) => { res.statusCode = err ? 404 : 200; res.end(err ? 'not found' : data) })
}).listen(process.env.PORT)
`,
}
/** A secret of the vps site: back readable after the restore, since the copy carries the box key. */
const DRILL_SECRET = 'tok_drill_5f0e8a7c2b9d4e1f'

let berth: Berth
let env: Record<string, string>
let dnsPort = 0
let instance = ''
let keys: { identityFile: string; recipient: string }
interface Site { slug: string; key: string; sku: string }
const sites: Site[] = []
const domain = `${uniqueSlug('drill')}.com`
let manifest: OffsiteManifest
/** The public half of the box's signing key, kept by the hoster from `berth offsite status`. */
let signingKey = ''

function dig(name: string, type: string): string[] {
  const p = spawnSync(['dig', '@127.0.0.1', '-p', String(dnsPort), '+norecurse', '+time=2', '+tries=2', '+short', name, type], { stdout: 'pipe' })
  return p.stdout.toString().trim().split('\n').filter(Boolean).sort()
}

async function sshRun(info: { host: string; port: number; username: string }, command: string) {
  const proc = spawn(['ssh', '-i', join(scratch, 'ed25519'), '-p', String(info.port), '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${join(scratch, 'known_hosts')}`, '-o', 'ConnectTimeout=10', `${info.username}@${info.host}`, command], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

async function restoreCli(args: string[]) {
  const proc = spawn([BINARY, 'restore', '--from', `file://${bucket}`, '--data-dir', dataDir, '--signing-key', signingKey, ...args], { env, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

/** What a customer and a visitor can observe of the box. */
async function observe() {
  const seen: Record<string, unknown> = {}
  for (const s of sites) {
    const site = await api(berth.url, 'GET', `/sites/${s.slug}/`, { key: s.key })
    seen[`${s.slug} site`] = { status: site.status, state: site.json?.data?.status, plan: site.json?.data?.plan?.slug ?? site.json?.data?.plan }
    seen[`${s.slug} whoami`] = (await api(berth.url, 'GET', '/auth/whoami/', { key: s.key })).json?.data?.user?.id
    seen[`${s.slug} page`] = await viaEdge(berth.url, s.slug, '/page.html').then((r) => `${r.status} ${r.text}`)
    const blob = await fetch(`${berth.url}/blob.bin`, { headers: { host: `${s.slug}.localhost:${berth.port}` } })
    seen[`${s.slug} blob`] = `${blob.status} ${new Bun.CryptoHasher('sha256').update(await blob.arrayBuffer()).digest('hex')}`
    seen[`${s.slug} files`] = (await siteShell(instance, s.slug, FINGERPRINT)).output
    seen[`${s.slug} dns`] = [dig(`${s.slug}.localhost`, 'A'), dig(`api.${s.slug}.localhost`, 'A'), dig(`_note.${s.slug}.localhost`, 'TXT')]
    // Its settings and secrets: a secret comes back readable only with the box key (secrets.key).
    seen[`${s.slug} env`] = (await api(berth.url, 'GET', `/sites/${s.slug}/env/`, { key: s.key })).json?.data
    // An app site (issue 39): its runtime, its live release, and the app's own answer with its settings.
    const app = site.json?.data?.app
    seen[`${s.slug} app`] = app ? `${app.runtime} ${app.release} ${await viaEdge(berth.url, s.slug, '/berth-app').then((r) => `${r.status} ${r.text}`)}` : null
  }
  const linked = await fetch(`${berth.url}/page.html`, { headers: { host: domain } })
  seen.linked = `${linked.status} ${await linked.text()}`
  seen.domainDns = [dig(domain, 'A'), dig(`www.${domain}`, 'A'), dig(`_verify.${domain}`, 'TXT')]
  return seen
}

beforeAll(async () => {
  dnsPort = await freePort()
  const sshBase = 40_000 + Math.floor(Math.random() * 200) * 100
  env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root',
    BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET, BERTH_CONTAINERS_FIREWALL: 'false', BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
    BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_RATE_LIMITS_REGISTER: '100/hour',
    BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}`, BERTH_SSH_HOST: '127.0.0.1',
    // A backup at every maintenance pass (30 s), so the shared site's newest one holds what was written.
    BERTH_ARCHIVES_BACKUP_INTERVAL_SECONDS: '1',
  }
  mkdirSync(dataDir)
  mkdirSync(bucket)
  keys = ageKeyPair(scratch)
  env.BERTH_OFFSITE_URL = `file://${bucket}`
  env.BERTH_OFFSITE_AGE_RECIPIENTS = keys.recipient
  expect(spawnSync(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'drill', '-f', join(scratch, 'ed25519')]).exitCode).toBe(0)
  berth = await startBerth({ dataDir, env })
}, 60_000)

afterAll(async () => {
  await berth?.stop()
  if (instance) await removeSitesOf(instance)
  rmSync(scratch, { recursive: true, force: true })
}, 60_000)

describe('the drill: the box rebuilt from its copies', () => {
  let before: Record<string, unknown>

  it('sets up three sites on three plans with files, DNS records, a linked domain, backups, snapshots and SSH', async () => {
    const bought = await Promise.all(PLANS.map(async (sku) => {
      const slug = uniqueSlug('drill')
      return { slug, sku, key: (await buyDirect(berth.url, { sku, slug })).data.api_key as string }
    }))
    for (const s of bought) expect(await waitForSite(berth.url, s.key, s.slug, 90_000)).toBe('active')
    sites.push(...bought)
    instance = instanceOf(berth)!
    expect(instance).toBeTruthy()
    const app = bought[2]!
    expect((await api(berth.url, 'PATCH', `/sites/${app.slug}/env/`, { key: app.key, body: { variables: { GREETING: 'drill', API_TOKEN: DRILL_SECRET }, secret: ['API_TOKEN'] } })).status).toBe(200)
    const upload = await fetch(`${berth.url}/api/v1/sites/${app.slug}/deploy/`, { method: 'POST', headers: { authorization: `Bearer ${app.key}`, 'content-type': 'application/gzip' }, body: Buffer.from(tarGz(DRILL_APP)) })
    const appDeploy = ((await upload.json()) as { data: { id: string } }).data.id
    for (let d = await api(berth.url, 'GET', `/sites/${app.slug}/deployments/${appDeploy}/`, { key: app.key }); ; d = await api(berth.url, 'GET', `/sites/${app.slug}/deployments/${appDeploy}/`, { key: app.key })) {
      if (d.json.data.status === 'failed') throw new Error(`the drill's app did not deploy: ${d.json.data.error}\n${d.json.data.output}`)
      if (d.json.data.status === 'succeeded') break
      await Bun.sleep(250)
    }

    const written = Date.now()
    for (const s of sites) {
      const w = await siteShell(instance, s.slug, `set -e; head -c 3000000 /dev/urandom > public/blob.bin; echo "<h1>${s.slug} ${Math.floor(Math.random() * 1e9)}</h1>" > public/page.html; mkdir -p notes && echo private > notes/a.txt && chmod 600 notes/a.txt; ln -sf public/page.html page-link`)
      expect(w.code, w.output).toBe(0)
      for (const body of [{ type: 'A', subdomain: 'api', value: '203.0.113.7' }, { type: 'TXT', subdomain: '_note', value: `drill ${s.slug}` }]) {
        const r = await api(berth.url, 'POST', `/sites/${s.slug}/dns/`, { key: s.key, body: { action: 'create', ...body } })
        expect(r.status, r.text).toBe(200)
      }
    }
    const [shared, vps, dedicated] = sites as [Site, Site, Site]
    const setEnv = await api(berth.url, 'PATCH', `/sites/${vps.slug}/env/`, { key: vps.key, body: { variables: { GREETING: 'hello', API_TOKEN: DRILL_SECRET }, secret: ['API_TOKEN'] } })
    expect(setEnv.status, setEnv.text).toBe(200)

    // A domain registered (sandbox registrar) with the card the purchase saved, and linked to the vps site.
    const reg = await api(berth.url, 'POST', '/domains/register/', { key: vps.key, body: { domain, period: 1, contact: CONTACT } })
    expect(reg.status, reg.text).toBe(201)
    const deadline = Date.now() + 30_000
    while ((await api(berth.url, 'GET', `/domains/${domain}/`, { key: vps.key })).json.data.status === 'pending' && Date.now() < deadline) await Bun.sleep(100)
    expect((await api(berth.url, 'POST', `/domains/${domain}/dns/add/`, { key: vps.key, body: { type: 'TXT', subdomain: '_verify', value: 'token-123' } })).status).toBe(200)
    expect((await api(berth.url, 'POST', `/domains/${domain}/link/`, { key: vps.key, body: { tenant_slug: vps.slug } })).status).toBe(200)

    // An SSH key in the vps site; the host key pinned from the API, so the same key must answer later.
    const info = (await api(berth.url, 'GET', `/sites/${vps.slug}/ssh/`, { key: vps.key })).json.data
    writeFileSync(join(scratch, 'known_hosts'), `${info.known_hosts.join('\n')}\n`)
    const added = await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key, body: { public_key: readFileSync(join(scratch, 'ed25519.pub'), 'utf8') } })
    expect(added.status, added.text).toBe(200)
    expect((await sshRun(info, 'cat notes/a.txt')).out).toBe('private\n')

    // Snapshots of the vps and dedicated sites; a backup of each, made after the files were written.
    for (const s of [vps, dedicated]) {
      const snap = await api(berth.url, 'POST', `/sites/${s.slug}/snapshot/`, { key: s.key })
      expect(snap.status, snap.text).toBe(200)
    }
    for (const s of sites) {
      const until = Date.now() + 100_000
      for (;;) {
        const backups = (await api(berth.url, 'GET', `/sites/${s.slug}/backups/`, { key: s.key })).json.data as { status: string; created_at: string }[]
        const snaps = s === shared ? [] : (await api(berth.url, 'GET', `/sites/${s.slug}/snapshots/`, { key: s.key })).json.data as { status: string }[]
        if (backups.some((b) => b.status === 'ready' && Date.parse(b.created_at) > written) && snaps.every((a) => a.status === 'ready')) break
        if (Date.now() > until) throw new Error(`${s.slug}: no backup after the writes: ${JSON.stringify(backups)}`)
        await Bun.sleep(500)
      }
    }
    before = await observe()
    expect(before[`${vps.slug} page`]).toMatch(/^200 <h1>/)
    expect(before.linked).toBe(before[`${vps.slug} page`])
    for (const s of sites) {
      expect(before[`${s.slug} site`]).toMatchObject({ status: 200, state: 'active' })
      expect(before[`${s.slug} page`]).toMatch(new RegExp(`^200 <h1>${s.slug} \\d+</h1>`))
      expect(before[`${s.slug} blob`]).toMatch(/^200 [0-9a-f]{64}$/)
      expect(before[`${s.slug} files`]).toMatch(/site:site 600 [0-9a-f]{64}  \.\/notes\/a\.txt\n/)
      expect(before[`${s.slug} dns`]).toEqual([['127.0.0.1'], ['203.0.113.7'], [`"drill ${s.slug}"`]])
    }
    expect(before[`${sites[2]!.slug} app`]).toMatch(new RegExp(`^node \\S+ 200 app \\S+ drill ${DRILL_SECRET.length}$`))
    expect(before.domainDns).toEqual([['127.0.0.1'], ['127.0.0.1'], ['"token-123"']])
  }, 240_000)

  it('loses the box: the copy is made, Berth stops, its containers, volumes, networks and data folder go', async () => {
    const push = spawnSync([BINARY, 'offsite', 'push', '--json', '--data-dir', dataDir], { env, stdout: 'pipe', stderr: 'pipe' })
    expect(push.exitCode, push.stderr.toString()).toBe(0)
    signingKey = JSON.parse(spawnSync([BINARY, 'offsite', 'status', '--json', '--data-dir', dataDir], { env, stdout: 'pipe' }).stdout.toString()).signing_key
    expect(signingKey).toMatch(/^ed25519:/)
    await berth.stop()
    // The copy made as Berth stopped is the newest: what the restore below takes.
    ;({ manifest } = await latestManifest(bucket, keys.identityFile))
    for (const s of manifest.sites) expect(s.archives.length, s.slug).toBeGreaterThan(0)
    // The box key of the sites' secrets travels in the manifest.
    expect(manifest.secrets_key).toMatch(/^1:[A-Za-z0-9+/]{43}=\n$/)
    expect(manifest.sites.map((s) => s.slug).sort()).toEqual(sites.map((s) => s.slug).sort())
    expect(Date.now() - Date.parse(manifest.made_at)).toBeLessThan(30_000)
    await removeSitesOf(instance)
    expect(await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instance}`] } })).toEqual([])

    // Refused: the data folder is still there.
    const refused = await restoreCli(['--identity', keys.identityFile])
    expect(refused.code).toBe(2)
    expect(refused.err).toContain(`The data folder ${dataDir} is not empty`)
    rmSync(dataDir, { recursive: true, force: true })
    // Refused: another identity.
    const stranger = ageKeyPair(scratch)
    const wrong = await restoreCli(['--identity', stranger.identityFile])
    expect(wrong.code).toBe(1)
    expect(wrong.err).toMatch(/The identity file does not open the manifest manifests\/\d{8}T\d{9}Z-[0-9a-f]{8}\.json\.age/)
  }, 120_000)

  it('berth restore brings every site back, then berth serve serves the box as it was', async () => {
    const started = performance.now()
    const r = await restoreCli(['--identity', keys.identityFile])
    const restoreMs = performance.now() - started
    expect(r.code, `${r.out}\n${r.err}`).toBe(0)
    for (const s of sites) expect(r.out).toMatch(new RegExp(`\\[\\d/3\\] ${s.slug}: files [\\d,]+ \\(\\d.* [kM]?B\\) \\.\\.\\. serving`))
    expect(r.out).toMatch(/SITE +STATUS +ARCHIVE USED +FILES +RESULT/)
    expect(r.out).toContain('secrets key: back in secrets.key')
    expect(r.out).toMatch(/Anything written after \d{4}-\d\d-\d\dT[\d:.]+Z is not in this copy: \d+ (s|min)/)
    console.log(`berth restore of the three-site drill: ${Math.round(restoreMs)} ms\n${r.out}`)

    berth = await startBerth({ dataDir, env, port: berth.port })
    for (const s of sites) expect(await waitForSite(berth.url, s.key, s.slug)).toBe('active')
    // The app site's processes start once berth serve hands them their settings (at its start).
    const app = sites[2]!
    for (const until = Date.now() + 60_000; (await viaEdge(berth.url, app.slug, '/berth-app')).status !== 200 && Date.now() < until;) await Bun.sleep(250)
    const after = await observe()
    if (JSON.stringify(after) !== JSON.stringify(before)) console.log(`Berth's log after the restore:\n${berth.output()}`)
    expect(after).toEqual(before)
    // Every backup and snapshot of the copy is listed again and can be restored (its file is back).
    for (const s of sites) {
      const copied = manifest.sites.find((m) => m.slug === s.slug)!.archives.map((a) => a.id)
      const listed = [
        ...(await api(berth.url, 'GET', `/sites/${s.slug}/backups/`, { key: s.key })).json.data,
        ...(s.sku === 'svc_starter_monthly' ? [] : (await api(berth.url, 'GET', `/sites/${s.slug}/snapshots/`, { key: s.key })).json.data),
      ].map((a: { id: string }) => a.id)
      expect(listed).toEqual(expect.arrayContaining(copied))
    }

    const vps = sites[1]!
    const info = (await api(berth.url, 'GET', `/sites/${vps.slug}/ssh/`, { key: vps.key })).json.data
    const ssh = await sshRun(info, 'id -u; cat notes/a.txt')
    expect(ssh.err).not.toContain('REMOTE HOST IDENTIFICATION HAS CHANGED')
    expect(ssh.code, ssh.err).toBe(0)
    expect(ssh.out).toBe('1000\nprivate\n')
    expect(after[`${vps.slug} env`]).toMatchObject({ count: 2, warning: null, variables: [{ name: 'API_TOKEN', readable: true, value: null, length: DRILL_SECRET.length }, { name: 'GREETING', value: 'hello' }] })
  }, 240_000)

  it("a store without its secrets key (a copy made before berth carried it) serves on, its secrets shown unreadable", async () => {
    await berth.stop()
    rmSync(join(dataDir, 'secrets.key'))
    berth = await startBerth({ dataDir, env, port: berth.port })
    const vps = sites[1]!
    const got = await api(berth.url, 'GET', `/sites/${vps.slug}/env/`, { key: vps.key })
    expect(got.status, got.text).toBe(200)
    expect(got.json.data.variables).toMatchObject([{ name: 'API_TOKEN', secret: true, readable: false, value: null, length: null }, { name: 'GREETING', readable: true, value: 'hello' }])
    expect(got.json.data.warning).toMatch(/cannot open the secrets API_TOKEN.*set each again/)
    // Set again, it is readable, sealed with the new key berth made.
    const again = await api(berth.url, 'PATCH', `/sites/${vps.slug}/env/`, { key: vps.key, body: { variables: { API_TOKEN: 'a-new-token-after-the-loss' } } })
    expect(again.json.data.variables[0]).toMatchObject({ name: 'API_TOKEN', secret: true, readable: true, length: 26 })
    expect(again.json.data.warning).toBeNull()
  }, 60_000)
})
