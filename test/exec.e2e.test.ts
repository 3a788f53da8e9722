import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * Issue 26, part 1, through the compiled binary on real sites: `POST /sites/{slug}/exec/` runs a
 * command in the site's container as the site user, on a shared site (berth/static, busybox) and
 * a vps site (berth/php, Debian), and as the MCP tool exec_command through the SDK's client.
 */
let berth: Berth
const sites = {
  shared: { slug: uniqueSlug('exs'), sku: 'svc_starter_monthly', key: '' },
  vps: { slug: uniqueSlug('exv'), sku: 'svc_business_monthly', key: '' },
}
const exec = (site: { slug: string; key: string }, body: unknown, key = site.key) => api(berth.url, 'POST', `/sites/${site.slug}/exec/`, { key, body })
/** Command lines of the processes in the site's container, from /proc. */
const processes = async (slug: string) => (await siteShell(berth, slug, 'for p in /proc/[0-9]*; do echo "$(tr "\\0" " " < $p/cmdline)"; done')).output

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  for (const site of Object.values(sites)) site.key = (await buyDirect(berth.url, { slug: site.slug, sku: site.sku })).data.api_key as string
  for (const site of Object.values(sites)) expect(await waitForSite(berth.url, site.key, site.slug, 120_000)).toBe('active')
}, 240_000)
afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
}, 120_000)

describe.each(['shared', 'vps'] as const)('exec on a %s site', (kind) => {
  const site = sites[kind]

  it('runs as the site user in its home and answers the exit code, stdout and stderr apart', async () => {
    const res = await exec(site, { command: ['sh', '-c', 'id -u; echo $HOME; echo warn >&2; exit 3'] })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ exit_code: 3, stdout: '1000\n/home/site\n', stderr: 'warn\n', truncated: false, timed_out: false })
    expect(res.json.data.duration_ms).toBeLessThan(5_000)
  })

  it('runs a string with sh -c, in cwd, with env, and passes stdin', async () => {
    const res = await exec(site, { command: 'pwd; echo "$WHO"; cat | tr a-z A-Z', cwd: 'public', env: { WHO: 'agent' }, stdin: 'hello\n' })
    expect(res.json.data).toMatchObject({ exit_code: 0, stdout: '/home/site/public\nagent\nHELLO\n' })
    // No stdin: the input is empty, so cat ends at once.
    expect((await exec(site, { command: ['cat'], timeout_seconds: 10 })).json.data).toMatchObject({ exit_code: 0, stdout: '', timed_out: false })
  })

  it('kills the command and everything in its process group at the timeout; nothing is left', async () => {
    const started = performance.now()
    const res = await exec(site, { command: 'sleep 300 & sleep 300', timeout_seconds: 2 })
    expect(res.json.data).toMatchObject({ exit_code: 137, timed_out: true })
    expect(performance.now() - started).toBeLessThan(6_000)
    expect(await processes(site.slug)).not.toContain('sleep 300')
  })

  it('keeps the last 1 MiB of a longer output and says it truncated', async () => {
    const res = await exec(site, { command: 'head -c 1500000 /dev/zero | tr "\\0" x; echo TAIL' })
    const { stdout, truncated, exit_code } = res.json.data
    expect({ exit_code, truncated, length: stdout.length, end: stdout.slice(-6) }).toEqual({ exit_code: 0, truncated: true, length: 1024 * 1024, end: 'xxTAIL\n'.slice(-6) })
  })

  it('refuses a cwd outside the home, through .., or through a symbolic link, with 422 on cwd', async () => {
    await exec(site, { command: 'ln -sfn /etc ~/etc-link' })
    for (const cwd of ['/etc', '/home/site/../../etc', '../', 'etc-link', 'public/missing']) {
      const res = await exec(site, { command: ['pwd'], cwd })
      expect([res.status, res.json.error.code, res.json.error.param], cwd).toEqual([422, 'VALIDATION_ERROR', 'cwd'])
      expect(res.json.error.message, cwd).toMatch(/home/)
    }
    expect((await exec(site, { command: ['pwd'], cwd: '/home/site/public' })).json.data.stdout).toBe('/home/site/public\n')
  })
})

describe('who may exec', () => {
  it("answers another account's key 404, and a read-only key 403", async () => {
    const stranger = await exec(sites.shared, { command: ['true'] }, sites.vps.key)
    expect([stranger.status, stranger.json.error.code]).toEqual([404, 'NOT_FOUND'])
    const created = await api(berth.url, 'POST', '/keys/create/', { key: sites.shared.key, body: { name: 'reader', scopes: ['read'] } })
    expect(created.status, created.text).toBe(201)
    const reader = await exec(sites.shared, { command: ['true'] }, created.json.data.api_key)
    expect([reader.status, reader.json.error.code]).toEqual([403, 'FORBIDDEN'])
  })

  it('lets a site-scoped key (claim flow) run commands on its own site', async () => {
    const requested = await api(berth.url, 'POST', '/keys/claim/request/', { body: { site_slug: sites.vps.slug } })
    expect(requested.status, requested.text).toBe(201)
    const token = (await exec(sites.vps, { command: ['cat', '.svc/.claim_token'] })).json.data.stdout.trim()
    const claimed = await api(berth.url, 'POST', '/keys/claim/', { body: { claim_token: token } })
    expect(claimed.status, claimed.text).toBe(201)
    const res = await exec(sites.vps, { command: ['id', '-un'] }, claimed.json.data.api_key)
    expect(res.json.data).toMatchObject({ exit_code: 0, stdout: 'site\n' })
  })
})

describe('limits', () => {
  it('runs two at once per site; the third is refused with 429 and Retry-After', async () => {
    const first = exec(sites.shared, { command: 'sleep 2; echo one' })
    const second = exec(sites.shared, { command: 'sleep 2; echo two' })
    await Bun.sleep(700)
    const third = await exec(sites.shared, { command: ['true'] })
    expect([third.status, third.json.error.code]).toEqual([429, 'RATE_LIMITED'])
    const retry = Number(third.headers.get('retry-after'))
    expect(retry).toBeGreaterThanOrEqual(1)
    expect(retry).toBeLessThanOrEqual(5)
    // Another site's execs are its own.
    expect((await exec(sites.vps, { command: ['true'] })).status).toBe(200)
    expect((await first).json.data.stdout).toBe('one\n')
    expect((await second).json.data.stdout).toBe('two\n')
    expect((await exec(sites.shared, { command: ['true'] })).status).toBe(200)
  })

  it('refuses bad input with 422 (413 for stdin) naming the field', async () => {
    const cases: [unknown, number, string][] = [
      [{ command: [] }, 422, 'command'],
      [{ command: '' }, 422, 'command'],
      [{ command: 42 }, 422, 'command'],
      [{ command: ['true'], timeout_seconds: 0 }, 422, 'timeout_seconds'],
      [{ command: ['true'], timeout_seconds: 901 }, 422, 'timeout_seconds'],
      [{ command: ['true'], env: { 'BAD-NAME': 'x' } }, 422, 'env'],
      [{ command: ['true'], env: { BERTH_EXEC_ID: 'x' } }, 422, 'env'],
      [{ command: ['true'], shell: true }, 422, 'shell'],
      [{ command: ['true'], stdin: 'a'.repeat(1024 * 1024 + 1) }, 413, 'stdin'],
    ]
    for (const [body, status, param] of cases) {
      const res = await exec(sites.shared, body)
      expect([res.status, res.json.error.param], JSON.stringify(body).slice(0, 80)).toEqual([status, param])
    }
    // 1 MiB of stdin fits the body limit, past server.max_body_bytes.
    const full = await exec(sites.shared, { command: ['wc', '-c'], stdin: 'a'.repeat(1024 * 1024) })
    expect(full.json.data.stdout.trim()).toBe(String(1024 * 1024))
  })

  it('answers 409 while the site is not running', async () => {
    const [found] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${sites.shared.slug}`] } })
    await docker.getContainer(found!.Id).pause()
    try {
      const res = await exec(sites.shared, { command: ['true'] })
      expect([res.status, res.json.error.code]).toEqual([409, 'CONFLICT'])
    } finally {
      await docker.getContainer(found!.Id).unpause().catch(() => {})
    }
  })
})

describe('the MCP tool exec_command', () => {
  it('runs a command through the SDK client and answers the same fields', async () => {
    const client = new Client({ name: 'berth-e2e', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${berth.url}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${sites.vps.key}` } } }))
    try {
      const tool = (await client.listTools()).tools.find((t) => t.name === 'exec_command')!
      expect(tool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false })
      const result = (await client.callTool({ name: 'exec_command', arguments: { tenant_slug: sites.vps.slug, command: ['php', '-r', 'echo PHP_MAJOR_VERSION > 7 ? "modern" : "old";'] } })) as { isError?: boolean; structuredContent?: any }
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: 'modern', timed_out: false })
      const refused = (await client.callTool({ name: 'exec_command', arguments: { tenant_slug: sites.vps.slug, command: ['pwd'], cwd: '/etc' } })) as { isError?: boolean; content: { text: string }[] }
      expect(refused.isError).toBe(true)
      expect(refused.content[0]!.text).toContain('cwd')
    } finally {
      await client.close()
    }
  })
})
