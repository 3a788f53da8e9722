import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { startGitServer, type GitServer } from './helpers/git-server'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'
import { tarGz, zipOf } from './helpers/trees'

/**
 * Apps end to end (issue 39): the compiled binary, the real engine and berth/app:1, the edge, the
 * npm registry (a dependency fetched by the build inside the container) and a git server in a
 * network namespace of its own (test/helpers/git-server.ts), which outbound.allow_networks lets
 * Berth fetch from. One Node site goes through a tar.gz, a git repository, redeploys, a rollback,
 * a settings change, a failed build and an app that crashes; another site runs Bun, Python and a
 * static build in turn.
 */
let berth: Berth
let git: GitServer
let node: Site
let other: Site

interface Site { slug: string; key: string }

const SECRET = `tok_${crypto.randomUUID().replaceAll('-', '')}`

beforeAll(async () => {
  git = await startGitServer('apps')
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_OUTBOUND_ALLOW_NETWORKS: git.network, BERTH_APPS_HEALTH_TIMEOUT_SECONDS: '20' } })
  ;[node, other] = await Promise.all([buy(), buy()])
  instanceOf(berth)
}, 180_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await git?.close()
}, 90_000)

async function buy(sku = 'svc_starter_monthly'): Promise<Site> {
  const slug = uniqueSlug('app')
  const { data } = await buyDirect(berth.url, { sku, slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

const call = (site: Site, method: string, rest: string, body?: unknown) => api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })

/** Sends a tree as the raw body of deploySite. */
async function upload(site: Site, bytes: Uint8Array, type = 'application/gzip') {
  const res = await fetch(`${berth.url}/api/v1/sites/${site.slug}/deploy/`, { method: 'POST', headers: { authorization: `Bearer ${site.key}`, 'content-type': type }, body: Buffer.from(bytes) })
  return { status: res.status, json: (await res.json()) as { data: { id: string; status: string }; error?: { code: string; param: string; message: string } } }
}

async function finished(site: Site, id: string, timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await call(site, 'GET', `deployments/${id}/`)
    expect(res.status, res.text).toBe(200)
    const d = res.json.data
    if (d.status === 'succeeded' || d.status === 'failed') return d
    if (Date.now() > deadline) throw new Error(`deployment ${id} still ${d.status}: ${d.output}`)
    await Bun.sleep(250)
  }
}

async function deployed(site: Site, bytes: Uint8Array, type?: string) {
  const res = await upload(site, bytes, type)
  expect(res.status, JSON.stringify(res.json)).toBe(200)
  return finished(site, res.json.data.id)
}

/** Requests through the edge in a loop until `stop`, counting answers that are not 200. */
function requestLoop(slug: string) {
  let running = true
  const failures: string[] = []
  let count = 0
  const done = (async () => {
    while (running) {
      const r = await viaEdge(berth.url, slug, '/').catch((err: Error) => ({ status: 0, text: err.message }))
      count++
      if (r.status !== 200) failures.push(`${r.status} ${r.text.slice(0, 120)}`)
    }
  })()
  return { stop: async () => { running = false; await done; return { count, failures } } }
}

const nodeApp = (version: string, extra: Record<string, string> = {}) => ({
  'package.json': JSON.stringify({ name: 'hello', version: '1.0.0', scripts: { build: 'node build.js', start: 'node server.js' }, dependencies: { ms: '2.1.3' } }),
  'build.js': "console.log('building with token ' + process.env.API_TOKEN); require('fs').writeFileSync('built.txt', 'built')\n",
  'server.js': `const ms = require('ms'); const fs = require('fs')
console.log('starting with token ' + process.env.API_TOKEN)
require('http').createServer((req, res) => res.end(\`${version} \${ms('1m')} \${process.env.GREETING} \${(process.env.API_TOKEN || '').length} \${fs.readFileSync('built.txt', 'utf8')}\`)).listen(process.env.PORT)
`,
  ...extra,
})

describe('a Node app', () => {
  let first: { id: string; status: string; output: string; error: string | null }

  it('deploys from a tar.gz: the build fetches its dependency from the npm registry, the edge answers with the app, a variable and a secret reach it', async () => {
    const env = await call(node, 'PATCH', 'env/', { variables: { GREETING: 'hi', API_TOKEN: SECRET }, secret: ['API_TOKEN'] })
    expect(env.status, env.text).toBe(200)
    first = await deployed(node, tarGz(nodeApp('v1')))
    expect(first.status, first.output + first.error).toBe('succeeded')
    expect(first).toMatchObject({ runtime: 'node', source: { kind: 'archive', format: 'gzip' }, files_recorded: true })
    expect(first.output).toContain('==> Detected node')
    expect(first.output).toContain('building with token')
    const page = await viaEdge(berth.url, node.slug, '/')
    expect(page.text).toBe(`v1 60000 hi ${SECRET.length} built`)
    // One line per request in the access log: the edge writes it (it reaches the app directly),
    // and the front, which no longer sees the request, does not as well.
    const marker = `m${crypto.randomUUID().slice(0, 8)}`
    expect((await viaEdge(berth.url, node.slug, `/?${marker}`)).status).toBe(200)
    const access = await call(node, 'GET', `logs/?type=access&search=${marker}`)
    expect(access.json.data.lines, access.text).toEqual([expect.stringMatching(new RegExp(`"GET /\\?${marker} HTTP/1.1" 200 `))])
    const site = await call(node, 'GET', '')
    expect(site.json.data.app).toMatchObject({ runtime: 'node', release: first.id })
    expect(site.json.data.app.processes).toEqual([expect.objectContaining({ name: 'web', state: 'running' })])
  }, 300_000)

  it('shows the secret nowhere: not in the deployment output, the app logs, the settings or the site view', async () => {
    const logs = await call(node, 'GET', 'logs/?type=app&process=web')
    expect(logs.status, logs.text).toBe(200)
    expect(logs.json.data.lines.join('\n')).toContain('starting with token')
    for (const text of [first.output, logs.text, (await call(node, 'GET', 'env/')).text, (await call(node, 'GET', '')).text, (await call(node, 'GET', 'deployments/')).text]) {
      expect(text).not.toContain(SECRET)
    }
  })

  it('exec runs in the app\'s environment: its variables, its runtime on the PATH, in its home', async () => {
    const res = await call(node, 'POST', 'exec/', { command: 'node -e "console.log(process.env.GREETING, require(\'fs\').readlinkSync(\'app/current\'))" && command -v npm' })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ exit_code: 0 })
    expect(res.json.data.stdout).toBe(`hi releases/${first.id}\n/opt/node/bin/npm\n`)
  })

  it('deploys from a git repository (a tag), and a zip; the previous release keeps serving through each switch, a settings change and a rollback', async () => {
    const repo = git.makeRepo('hello', [{ files: nodeApp('v2'), tag: 'v2' }])
    const loop = requestLoop(node.slug)
    const res = await call(node, 'POST', 'deploy/', { source: { git: repo.http, ref: 'v2' } })
    expect(res.status, res.text).toBe(200)
    const viaGit = await finished(node, res.json.data.id)
    expect(viaGit.status, viaGit.output + viaGit.error).toBe('succeeded')
    expect(viaGit).toMatchObject({ source: { kind: 'git', ref: 'v2' }, commit: expect.stringMatching(/^[0-9a-f]{40}$/) })
    expect((await viaEdge(berth.url, node.slug, '/')).text).toMatch(/^v2 /)
    const zipped = await deployed(node, zipOf(nodeApp('v3')), 'application/zip')
    expect(zipped.status, zipped.output + zipped.error).toBe('succeeded')
    expect((await viaEdge(berth.url, node.slug, '/')).text).toMatch(/^v3 60000 hi/)
    expect((await call(node, 'PATCH', 'env/', { variables: { GREETING: 'hello' } })).status).toBe(200)
    expect((await viaEdge(berth.url, node.slug, '/')).text).toMatch(/^v3 60000 hello/)
    const starts = async () => ((await call(node, 'GET', 'logs/?type=app&process=web&search=starting%20with%20token&lines=500')).json.data.lines as string[]).length
    const startsBefore = await starts()
    const started = performance.now()
    const back = await call(node, 'POST', `deployments/${first.id}/rollback/`)
    expect(back.status, back.text).toBe(200)
    const rolled = await finished(node, back.json.data.id)
    expect(rolled.status, rolled.output + rolled.error).toBe('succeeded')
    expect(performance.now() - started).toBeLessThan(15_000)
    // The rollback started the old release's web process once, and did not restart the live one
    // first (the settings it holds are the site's already).
    expect(await starts()).toBe(startsBefore + 1)
    expect((await viaEdge(berth.url, node.slug, '/')).text).toMatch(/^v1 60000 hello/)
    const { count, failures } = await loop.stop()
    expect(failures).toEqual([])
    expect(count).toBeGreaterThan(50)
  }, 400_000)

  it('a build that fails and an app that crashes at start leave the live release serving, each with its reason', async () => {
    const broken = await deployed(node, tarGz({ ...nodeApp('v4'), 'build.js': "console.error('the build broke'); process.exit(3)\n" }))
    expect(broken.status).toBe('failed')
    expect(broken.error).toMatch(/build command.*exit code 3/)
    expect(broken.output).toContain('the build broke')
    const crashing = await deployed(node, tarGz({ ...nodeApp('v5'), 'server.js': "console.error('cannot start: no DATABASE_URL'); process.exit(1)\n" }))
    expect(crashing.status).toBe('failed')
    expect(crashing.error).toMatch(/did not start.*exit/)
    expect(crashing.output).toContain('cannot start: no DATABASE_URL')
    expect((await viaEdge(berth.url, node.slug, '/')).text).toMatch(/^v1 /)
  }, 300_000)
})

/** What the direct-path app answers: who it saw (its peer, the forwarding fields), its port and pid. */
interface Seen { v: string; port: string; pid: number; peer: string; xff: string; proto: string; fhost: string; host: string }
const echoApp = (version: string) => ({
  'package.json': JSON.stringify({ name: 'echo', version: '1.0.0', scripts: { start: 'node server.js' } }),
  'server.js': `require('http').createServer((req, res) => setTimeout(() => res.end(JSON.stringify({ v: '${version}', port: process.env.PORT, pid: process.pid, peer: req.socket.remoteAddress,
  xff: req.headers['x-forwarded-for'], proto: req.headers['x-forwarded-proto'], fhost: req.headers['x-forwarded-host'], host: req.headers.host })), req.url === '/slow' ? 3000 : 0)).listen(process.env.PORT)
`,
})
const LOOPBACK = /^(::ffff:)?127\.0\.0\.1$|^::1$/

describe('the edge reaches the web process directly (no front on this box)', () => {
  const seen = async (): Promise<Seen> => {
    const r = await viaEdge(berth.url, node.slug, '/')
    expect(r.status, r.text).toBe(200)
    return JSON.parse(r.text) as Seen
  }
  /** The edge's answers until one comes from a process other than `pid` (restarted); each failure's status kept. */
  const servedAgain = async (pid: number, withinMs: number) => {
    const statuses = new Set<number>()
    const views = new Set<number>()
    const deadline = Date.now() + withinMs
    for (;;) {
      const r = await viaEdge(berth.url, node.slug, '/').catch(() => ({ status: 0, text: '' }))
      if (r.status === 200 && (JSON.parse(r.text) as Seen).pid !== pid) return { after: JSON.parse(r.text) as Seen, statuses, views }
      statuses.add(r.status)
      views.add((await call(node, 'GET', '')).status)
      if (Date.now() > deadline) throw new Error(`not served again within ${withinMs} ms: ${[...statuses].join(', ')}`)
      await Bun.sleep(100)
    }
  }
  let before: Seen

  it('the app sees the edge as its peer, with the visitor, https or http, and the host in the forwarding fields as the front gave them', async () => {
    const d = await deployed(node, tarGz(echoApp('d1')))
    expect(d.status, d.output + d.error).toBe('succeeded')
    before = await seen()
    const port = new URL(berth.url).port
    // Through the front the peer was nginx in the container (127.0.0.1); now it is the edge, on the host.
    expect(before.peer).not.toMatch(LOOPBACK)
    expect(before).toMatchObject({ v: 'd1', xff: expect.stringMatching(LOOPBACK), proto: 'http', fhost: `${node.slug}.localhost:${port}`, host: `${node.slug}.localhost:${port}` })
    expect(Number(before.port)).toBeGreaterThanOrEqual(3000)
    expect(Number(before.port)).toBeLessThan(3010)
  }, 300_000)

  it('writes the access log the front wrote (combined format, one line a request): logs/?type=access keeps working', async () => {
    const marker = `m${crypto.randomUUID().slice(0, 8)}`
    expect((await viaEdge(berth.url, node.slug, `/?${marker}`)).status).toBe(200)
    const access = await call(node, 'GET', `logs/?type=access&search=${marker}`)
    expect(access.status, access.text).toBe(200)
    expect(access.json.data.lines, access.text).toEqual([expect.stringMatching(new RegExp(`^\\S+ - - \\[[^\\]]+\\] "GET /\\?${marker} HTTP/1.1" 200 \\d+ "-" "[^"]*"$`))])
  })

  it('a settings change moves the edge to a new web process; a request in flight on the old one finishes first', async () => {
    const started = performance.now()
    const slow = viaEdge(berth.url, node.slug, '/slow')
    await Bun.sleep(300)
    expect((await call(node, 'PATCH', 'env/', { variables: { GREETING: 'moved' } })).status).toBe(200)
    const moved = await seen()
    expect(moved.pid).not.toBe(before.pid)
    expect(moved.port).not.toBe(before.port)
    expect(moved.peer).not.toMatch(LOOPBACK)
    const answer = await slow
    expect(answer.status, answer.text).toBe(200)
    expect((JSON.parse(answer.text) as Seen).pid).toBe(before.pid)
    expect(performance.now() - started).toBeGreaterThan(3000)
    // Its request done and the edge's connections to it closed, the old process is stopped at once.
    const deadline = Date.now() + 5_000
    while ((await siteShell(berth, node.slug, `kill -0 ${before.pid}`)).code === 0) {
      if (Date.now() > deadline) throw new Error(`the old web process ${before.pid} still runs 5 s after its last request`)
      await Bun.sleep(100)
    }
    before = moved
  }, 60_000)

  it('a web process killed inside the container is restarted by the supervisor on the same port, and the edge serves it again within seconds', async () => {
    const killed = await siteShell(berth, node.slug, `kill -9 ${before.pid}`)
    expect(killed.code, killed.output).toBe(0)
    const { after, views } = await servedAgain(before.pid, 15_000)
    expect([...views].every((s) => s === 200)).toBe(true)
    expect(after).toMatchObject({ v: 'd1', port: before.port })
    expect(after.peer).not.toMatch(LOOPBACK)
    const view = await call(node, 'GET', '')
    expect(view.json.data.app.processes).toEqual([expect.objectContaining({ name: 'web', restarts: 1, last_exit_code: 137 })])
    before = after
  }, 60_000)

  it('a restarted container serves on the port Berth knows, still straight from the app', async () => {
    const [found] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${node.slug}`] } })
    await docker.getContainer(found!.Id).restart({ t: 5 })
    const { after } = await servedAgain(before.pid, 90_000)
    expect(after).toMatchObject({ v: 'd1', port: before.port })
    expect(after.peer).not.toMatch(LOOPBACK)
  }, 120_000)
})

describe('other runtimes on one site', () => {
  it('a Bun app, then a Python app, then a static site built by npm run build', async () => {
    const bun = await deployed(other, tarGz({
      // What bun install writes for this package.json (Bun 1.4.5): a frozen install must find it unchanged.
      'bun.lock': `{
  "lockfileVersion": 2,
  "configVersion": 1,
  "workspaces": {
    "": {
      "name": "b",
      "dependencies": {
        "ms": "2.1.3",
      },
    },
  },
  "packages": {
    "ms": ["ms@2.1.3", "", {}, "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA=="],
  }
}
`,
      'package.json': '{"name": "b", "dependencies": {"ms": "2.1.3"}}',
      'index.ts': "import ms from 'ms'\nBun.serve({ port: Number(process.env.PORT), fetch: () => new Response(`bun ${Bun.version} ${ms('1s')}`) })\n",
    }))
    expect(bun.status, bun.output + bun.error).toBe('succeeded')
    expect((await viaEdge(berth.url, other.slug, '/')).text).toMatch(/^bun 1\.4\.5 1000$/)
    const py = await deployed(other, tarGz({
      'requirements.txt': '# the standard library only\n',
      'app.py': `import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"python {sys.version_info[0]}.{sys.version_info[1]} {sys.prefix.endswith('.venv')}".encode()
        self.send_response(200); self.send_header('content-length', str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`,
    }))
    expect(py.status, py.output + py.error).toBe('succeeded')
    expect((await viaEdge(berth.url, other.slug, '/')).text).toBe('python 3.11 True')
    const stat = await deployed(other, tarGz({
      'package.json': JSON.stringify({ name: 's', scripts: { build: 'node build.js' } }),
      'build.js': "require('fs').mkdirSync('dist'); require('fs').writeFileSync('dist/index.html', '<h1>built ' + process.version + '</h1>')\n",
    }))
    expect(stat.status, stat.output + stat.error).toBe('succeeded')
    expect(stat.runtime).toBe('static')
    expect((await viaEdge(berth.url, other.slug, '/')).text).toMatch(/^<h1>built v24\./)
    const site = await call(other, 'GET', '')
    expect(site.json.data.app).toMatchObject({ runtime: 'static', release: stat.id, processes: [] })
  }, 400_000)

  it('takes an archive in JSON too (archive_base64: what an MCP client can send), and refuses one with git beside it', async () => {
    const page = `<p>${crypto.randomUUID()}</p>`
    const archive_base64 = Buffer.from(zipOf({ 'index.html': page })).toString('base64')
    const both = await call(other, 'POST', 'deploy/', { source: { git: 'https://example.com/x.git', archive_base64, format: 'zip' } })
    expect(both.status).toBe(422)
    expect(both.json.error).toMatchObject({ param: 'source' })
    const res = await call(other, 'POST', 'deploy/', { source: { archive_base64, format: 'zip' } })
    expect(res.status, res.text).toBe(200)
    const d = await finished(other, res.json.data.id)
    expect(d.status, d.output + d.error).toBe('succeeded')
    expect((await viaEdge(berth.url, other.slug, '/')).text).toBe(page)
  }, 120_000)
})
