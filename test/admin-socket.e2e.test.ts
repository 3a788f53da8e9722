import { spawn } from 'bun'
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { removeInstanceSites } from './helpers/sites'

/**
 * `berth serve` is the one process that changes the sites (issue 37): the admin commands are
 * clients of its admin socket, DATA_DIR/admin.sock. Run as the compiled binary, as the hoster
 * would: with no server a state-changing command refuses with the fix; the socket is root's
 * only; none of berth serve's other doors (the API listener, MCP, the edge, the console) reaches
 * the admin API; berth serve holds the data folder's lock against the offline commands.
 */
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET }

/** Runs `berth ARGS --data-dir DIR` (as `user`: root, or nobody through setpriv). */
async function berthCli(dataDir: string, args: string[], user: 'root' | 'nobody' = 'root') {
  const argv = [BINARY, ...args, '--data-dir', dataDir]
  const proc = spawn(user === 'root' ? argv : ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...argv], { env: ENV, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

describe('with no berth serve running', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-adm-down-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it.each([
    ['sites', 'suspend', 'shop', '--reason', 'abuse'],
    ['sites', 'resume', 'shop'],
    ['sites', 'delete', 'shop', '--now'],
    ['accounts', 'suspend', '0b7c0c7e-3f1a-4f57-9d5e-2a6f3c1d8e90', '--reason', 'fraud'],
    ['plans', 'deprecate', 'starter'],
    ['plans', 'add', '--slug', 'growth', '--name', 'Growth', '--track', 'single_site', '--hosting-type', 'vps', '--monthly', '19'],
  ])('berth %s %s refuses, exit 1, naming the socket and how to start berth serve', async (...args) => {
    const r = await berthCli(dataDir, args)
    expect(r.code, r.stderr).toBe(1)
    expect(r.stdout).toBe('')
    expect(r.stderr).toBe(`berth: berth serve is not running (no admin socket at ${dataDir}/admin.sock); start it: systemctl start berth (or berth serve --data-dir ${dataDir})\n`)
  })

  it('a read-only command reads the store itself: the catalog is unchanged by the refused commands above', async () => {
    const r = await berthCli(dataDir, ['plans', 'list', '--json'])
    expect(r.code, r.stderr).toBe(0)
    const plans = JSON.parse(r.stdout) as { slug: string; deprecated: boolean }[]
    expect(plans.find((p) => p.slug === 'starter')?.deprecated).toBe(false)
    expect(plans.map((p) => p.slug)).not.toContain('growth')
  })
})

describe('beside a running berth serve', () => {
  let berth: Berth
  let shop: { slug: string; key: string }
  const socket = () => join(berth.dataDir, 'admin.sock')

  beforeAll(async () => {
    berth = await startBerth()
    const slug = uniqueSlug('adm-doors')
    const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    shop = { slug, key: data.api_key as string }
  }, 120_000)
  afterAll(async () => {
    await berth?.stop()
    await removeInstanceSites(berth)
  })

  it('listens on DATA_DIR/admin.sock, a socket of mode 0600 owned by root', () => {
    const st = statSync(socket())
    expect(st.isSocket()).toBe(true)
    expect(st.mode & 0o777).toBe(0o600)
    expect(st.uid).toBe(0)
  })

  it('refuses a caller that is not root, even with the data folder open to others', async () => {
    const before = statSync(berth.dataDir).mode & 0o777
    // Only the socket's own mode stands between nobody and the admin API now.
    chmodSync(berth.dataDir, 0o711)
    try {
      const cli = await berthCli(berth.dataDir, ['sites', 'suspend', shop.slug, '--reason', 'from nobody'], 'nobody')
      expect(cli.code).toBe(1)
      expect(cli.stderr).toContain(`the admin socket ${socket()} is root's (mode 0600): run the command as root`)
      const raw = spawn(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'curl', '-sS', '--unix-socket', socket(), '-X', 'POST', '-d', `{"slug":"${shop.slug}","reason":"raw"}`, 'http://admin/v1/sites/suspend'], { stdout: 'pipe', stderr: 'pipe' })
      const [out, err, code] = await Promise.all([new Response(raw.stdout).text(), new Response(raw.stderr).text(), raw.exited])
      expect(code, out).not.toBe(0)
      expect(err).toMatch(/Permission denied|Couldn't connect/)
    } finally {
      chmodSync(berth.dataDir, before)
    }
    expect((await api(berth.url, 'GET', `/sites/${shop.slug}/`, { key: shop.key })).json.data.status).toBe('active')
  })

  it("no other door reaches the admin API: its paths on the API listener, MCP, the edge and the console change nothing", async () => {
    const body = JSON.stringify({ slug: shop.slug, reason: 'through a public door' })
    const port = new URL(berth.url).port
    const tries: [string, string, Record<string, string>][] = [
      ['the API listener', '/v1/sites/suspend', {}],
      ['the API listener', '/api/v1/sites/suspend', {}],
      ['the API listener, with the key', '/api/v1/v1/sites/suspend', { authorization: `Bearer ${shop.key}` }],
      ['MCP', '/mcp/v1/sites/suspend', {}],
      ['the console', '/console/v1/sites/suspend', {}],
      ['the edge', '/v1/sites/suspend', { host: `${shop.slug}.localhost:${port}` }],
    ]
    for (const [door, path, headers] of tries) {
      const res = await fetch(`${berth.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })
      await res.arrayBuffer()
      expect(res.status, `${door} ${path}`).toBeGreaterThanOrEqual(400)
    }
    expect((await api(berth.url, 'GET', `/sites/${shop.slug}/`, { key: shop.key })).json.data.status).toBe('active')
    expect((await viaEdge(berth.url, shop.slug)).status).toBe(200)
    // The same operation on the admin socket, as root, does it: the doors above were refused for where they are, not for what they asked.
    const raw = spawn(['curl', '-sS', '--unix-socket', socket(), '-X', 'POST', '-d', JSON.stringify({ slug: shop.slug, reason: 'through the admin socket' }), 'http://admin/v1/sites/suspend'], { stdout: 'pipe', stderr: 'pipe' })
    const [out, err] = await Promise.all([new Response(raw.stdout).text(), new Response(raw.stderr).text(), raw.exited])
    const lines = out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))
    expect(lines.at(-1), err).toMatchObject({ result: { slug: shop.slug, status: 'suspended', suspension: { by: 'admin', reason: 'through the admin socket' } } })
    expect((await api(berth.url, 'GET', `/sites/${shop.slug}/`, { key: shop.key })).json.data.status).toBe('suspended')
    const resumed = await berthCli(berth.dataDir, ['sites', 'resume', shop.slug])
    expect(resumed.code, resumed.stderr).toBe(0)
  })

  it('holds the data folder: berth migrate and a second berth serve are refused, naming berth serve and its pid', async () => {
    const migrate = await berthCli(berth.dataDir, ['migrate'])
    expect(migrate.code).toBe(1)
    expect(migrate.stderr).toContain(`is in use by pid ${berth.proc.pid}: berth serve (${berth.dataDir}/berth.lock)`)
    expect(migrate.stderr).toContain('stop berth serve first')
    const second = await berthCli(berth.dataDir, ['serve', '--listen', '127.0.0.1:0'])
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`is in use by pid ${berth.proc.pid}: berth serve`)
    // The first one still serves.
    expect((await api(berth.url, 'GET', '/status/')).status).toBe(200)
  })
})
