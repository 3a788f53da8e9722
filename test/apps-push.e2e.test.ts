import { spawn } from 'bun'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * `git push` to a vps site over SSH (issue 39), end to end: the compiled binary, the real engine
 * and berth/app:1, the real OpenSSH client and git on the host. The pusher's own terminal is the
 * only window: what git prints (the build's lines as `remote: ...`, the result) and its exit code;
 * the edge shows which release serves.
 */
const work = mkdtempSync(join(tmpdir(), 'berth-push-'))
const repo = join(work, 'repo')
const keyFile = join(work, 'id_ed25519')
// A port block of its own, so parallel runs on the machine do not collide.
const firstPort = 20_000 + Math.floor(Math.random() * 400) * 100
let berth: Berth
let site: { slug: string; key: string }
let remote: string

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_SSH_PORT_RANGE: `${firstPort}-${firstPort + 99}`, BERTH_SSH_HOST: '127.0.0.1', BERTH_APPS_HEALTH_TIMEOUT_SECONDS: '20' } })
  instanceOf(berth)
  const slug = uniqueSlug('push')
  const bought = await buyDirect(berth.url, { slug, sku: 'svc_business_monthly' })
  site = { slug, key: bought.data.api_key }
  expect(await waitForSite(berth.url, site.key, slug)).toBe('active')
  expect(await run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'pusher', '-f', keyFile])).toMatchObject({ code: 0 })
  const added = await api(berth.url, 'POST', `/sites/${slug}/ssh/keys/`, { key: site.key, body: { public_key: readFileSync(`${keyFile}.pub`, 'utf8') } })
  expect(added.status, added.text).toBe(200)
  await git(['init', '--quiet', '--initial-branch=main', repo], work)
}, 180_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  rmSync(work, { recursive: true, force: true })
}, 90_000)

async function run(argv: string[], cwd = work, env: Record<string, string> = {}) {
  const proc = spawn(argv, { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...env } })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

const GIT_ENV = {
  GIT_SSH_COMMAND: `ssh -i ${keyFile} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR`,
  GIT_AUTHOR_NAME: 'Agent', GIT_AUTHOR_EMAIL: 'agent@example.com', GIT_COMMITTER_NAME: 'Agent', GIT_COMMITTER_EMAIL: 'agent@example.com',
}

async function git(args: string[], cwd = repo) {
  const r = await run(['git', ...args], cwd, GIT_ENV)
  if (r.code !== 0 && args[0] !== 'push') throw new Error(`git ${args.join(' ')}: ${r.err}`)
  return r
}

/** Writes the tree into the repository and commits it. */
async function commit(files: Record<string, string>, message: string) {
  for (const [path, text] of Object.entries(files)) writeFileSync(join(repo, path), text)
  await git(['add', '-A'])
  await git(['commit', '--quiet', '-m', message])
  return (await git(['rev-parse', 'HEAD'])).out.trim()
}

const SECRET = `tok_${crypto.randomUUID().replaceAll('-', '')}`

const app = (version: string, build = `console.log('building ${version} with ' + process.env.PUSH_TOKEN)`) => ({
  'package.json': JSON.stringify({ name: 'pushed', version: '1.0.0', scripts: { build: 'node build.js', start: 'node server.js' } }),
  'build.js': `${build}\n`,
  'server.js': `require('http').createServer((req, res) => res.end('${version} ' + process.env.BERTH_RELEASE)).listen(process.env.PORT)\n`,
})

const page = async () => (await viaEdge(berth.url, site.slug, '/')).text

const deployments = async () => (await api(berth.url, 'GET', `/sites/${site.slug}/deployments/`, { key: site.key })).json.data as { id: string; status: string; source: { kind: string; ref: string | null } | null; commit: string | null; error: string | null }[]

const call = (method: string, path: string, body?: unknown) => api(berth.url, method, `/sites/${site.slug}/${path}`, { key: site.key, body })

/** Runs a shell command in the site (the exec API); its stdout. */
async function inSite(command: string): Promise<string> {
  const res = await call('POST', 'exec/', { command })
  expect(res.status, res.text).toBe(200)
  return res.json.data.stdout as string
}

/** A PHP page that prints what PHP sees of two variables (getenv, $_ENV, $_SERVER). */
const ENV_PHP = "<?php header('Content-Type: text/plain'); foreach (['GREETING', 'DB_PASSWORD'] as $n) echo $n, '=', getenv($n), '|', $_ENV[$n] ?? '-', '|', $_SERVER[$n] ?? '-', ' ';\n"
const shows = (greeting: string, password: string) => `GREETING=${greeting}|${greeting}|${greeting} DB_PASSWORD=${password}|${password}|${password} `

/** GETs `path` through the edge until it answers `want` (a reload takes a moment), or fails with the last answer. */
async function untilPage(path: string, want: string, ms = 15_000) {
  const deadline = Date.now() + ms
  let last = await viaEdge(berth.url, site.slug, path)
  while (!(last.status === 200 && last.text === want) && Date.now() < deadline) {
    await Bun.sleep(100)
    last = await viaEdge(berth.url, site.slug, path)
  }
  expect(`${last.status} ${last.text}`).toBe(`200 ${want}`)
}

/** Requests `path` through the edge in a loop while `during` runs; every answer must be 200 and one of `allowed`. */
async function noFailedRequest(path: string, allowed: string[], during: () => Promise<void>) {
  let running = true
  const failures: string[] = []
  let count = 0
  const loop = (async () => {
    while (running) {
      const r = await viaEdge(berth.url, site.slug, path).catch((err: Error) => ({ status: 0, text: err.message }))
      count++
      if (r.status !== 200 || !allowed.includes(r.text)) failures.push(`${r.status} ${r.text.slice(0, 160)}`)
    }
  })()
  await during()
  running = false
  await loop
  expect(failures).toEqual([])
  expect(count).toBeGreaterThan(5)
}

const PHP_SECRET_1 = `pw1_${crypto.randomUUID().replaceAll('-', '')}`
const PHP_SECRET_2 = `pw2_${crypto.randomUUID().replaceAll('-', '')}`

describe('PHP on a vps site (berth/php) sees the site\'s settings and secrets', () => {
  it('getenv, $_ENV and $_SERVER show a setting and a secret, kept out of ps and of world-readable files; a change shows without a failed request', async () => {
    expect((await call('POST', 'files/write/', { path: 'public/env.php', content: ENV_PHP })).status).toBe(200)
    const set = await call('PATCH', 'env/', { variables: { GREETING: 'hello "one" $HOME \\ end', DB_PASSWORD: PHP_SECRET_1 }, secret: ['DB_PASSWORD'] })
    expect(set.status, set.text).toBe(200)
    await untilPage('/env.php', shows('hello "one" $HOME \\ end', PHP_SECRET_1))
    // The pool file is the site user's alone, on the container's tmpfs; no process shows a value.
    expect(await inSite('stat -c %a:%U /tmp/berth-php-env.conf; findmnt -n -o FSTYPE -T /tmp')).toBe('600:site\ntmpfs\n')
    expect(await inSite('ps -eo args')).not.toContain(PHP_SECRET_1)
    await noFailedRequest('/env.php', [shows('hello "one" $HOME \\ end', PHP_SECRET_1), shows('hello two', PHP_SECRET_2)], async () => {
      await Bun.sleep(300)
      const changed = await call('PATCH', 'env/', { variables: { GREETING: 'hello two', DB_PASSWORD: PHP_SECRET_2 } })
      expect(changed.status, changed.text).toBe(200)
      await untilPage('/env.php', shows('hello two', PHP_SECRET_2))
      await Bun.sleep(300)
    })
  }, 120_000)
})

describe('git push to a vps site over SSH', () => {
  it('enableGitPush while a deployment of the site runs: 409 DEPLOYMENT_RUNNING saying to wait, and nothing moves', async () => {
    expect((await call('POST', 'files/write/', { path: 'deploy.sh', content: 'sleep 8\n' })).status).toBe(200)
    const deploy = await call('POST', 'deploy/')
    expect(deploy.status, deploy.text).toBe(200)
    const id = deploy.json.data.id as string
    const refused = await call('POST', 'ssh/git/')
    expect(refused.status, refused.text).toBe(409)
    expect(refused.json.error).toMatchObject({ code: 'DEPLOYMENT_RUNNING', details: { deployment_id: id } })
    expect(refused.json.error.message).toContain(`Deployment ${id} of site '${site.slug}' is still queued or running`)
    expect(refused.json.error.message).toContain('then enable git push again')
    // Nothing moved: the site is not an app site, and the deploy finishes on its container.
    expect((await call('GET', '')).json.data.app).toBeNull()
    const deadline = Date.now() + 60_000
    let status = ''
    while (Date.now() < deadline && !['succeeded', 'failed'].includes(status)) {
      await Bun.sleep(500)
      status = (await call('GET', `deployments/${id}/`)).json.data.status
    }
    expect(status).toBe('succeeded')
    expect((await call('POST', 'files/delete/', { path: 'deploy.sh' })).status).toBe(200)
  }, 90_000)

  it('a push deploys: the pusher sees the build and the result, git exits 0, the edge serves the pushed commit', async () => {
    const info = await api(berth.url, 'GET', `/sites/${site.slug}/ssh/`, { key: site.key })
    expect(info.status, info.text).toBe(200)
    // A vps site that never deployed a source runs berth/php, which has no git: enableGitPush
    // moves it to the app image (its files kept, public/ served as before) and names the remote.
    const enabled = await api(berth.url, 'POST', `/sites/${site.slug}/ssh/git/`, { key: site.key })
    expect(enabled.status, enabled.text).toBe(200)
    remote = `ssh://site@127.0.0.1:${info.json.data.port}/~/app.git`
    expect(enabled.json.data).toEqual({ remote, command: `git remote add berth ${remote}`, branches: ['main', 'master'], moved: true })
    expect((await viaEdge(berth.url, site.slug, '/')).status).toBe(200)
    // Until the first release the view says no release serves yet, and that git push is on.
    expect((await call('GET', '')).json.data.app).toMatchObject({ runtime: null, release: null, git_push: true })
    // PHP on the app image sees the variables as it did on berth/php (the files of public/ are served).
    await untilPage('/env.php', shows('hello two', PHP_SECRET_2))
    const again = await api(berth.url, 'POST', `/sites/${site.slug}/ssh/git/`, { key: site.key })
    expect(again.json.data.moved).toBe(false)
    await git(['remote', 'add', 'berth', remote])
    const env = await api(berth.url, 'PATCH', `/sites/${site.slug}/env/`, { key: site.key, body: { variables: { PUSH_TOKEN: SECRET }, secret: ['PUSH_TOKEN'] } })
    expect(env.status, env.text).toBe(200)
    const sha = await commit(app('v1'), 'v1')
    const pushed = await git(['push', 'berth', 'main'])
    expect(pushed.code, pushed.err).toBe(0)
    expect(pushed.err).toContain(`remote: berth: deploying ${sha.slice(0, 12)} (refs/heads/main)`)
    expect(pushed.err).toContain('remote: ==> Detected node')
    // The build's line reaches the pusher with the secret masked, as in the deployment's output.
    expect(pushed.err).toContain('remote: building v1 with [secret]')
    expect(pushed.err).not.toContain(SECRET)
    expect(pushed.err).toMatch(/remote: Deployed: release \S+ serves the site\./)
    const [latest] = await deployments()
    expect(latest).toMatchObject({ status: 'succeeded', source: { kind: 'push', ref: 'main' }, commit: sha })
    expect(await page()).toBe(`v1 ${latest!.id}`)
    expect((await call('GET', '')).json.data.app).toMatchObject({ runtime: 'node', release: latest!.id, git_push: true })
  }, 300_000)

  it('a push to a branch other than main or master is refused with what to type, and deploys nothing', async () => {
    const before = (await deployments()).length
    await git(['checkout', '--quiet', '-b', 'feature'])
    await commit(app('v-feature'), 'feature')
    const pushed = await git(['push', 'berth', 'feature'])
    expect(pushed.code).not.toBe(0)
    expect(pushed.err).toContain('remote: Not deployed: Berth deploys pushes to main or master, and this push was to feature. Push it as main: git push berth feature:main')
    expect(pushed.err).toContain('[remote rejected] feature -> feature (pre-receive hook declined)')
    expect((await deployments()).length).toBe(before)
    await git(['checkout', '--quiet', 'main'])
  }, 60_000)

  it('a push whose build fails is rejected with the reason, and the previous release keeps serving; the next good push deploys', async () => {
    const before = await page()
    await commit(app('v2', "console.log('about to fail'); process.exit(3)"), 'broken')
    const broken = await git(['push', 'berth', 'main'])
    expect(broken.code).not.toBe(0)
    expect(broken.err).toContain('remote: about to fail')
    expect(broken.err).toMatch(/remote: Not deployed: The build command: npm run build failed with exit code 3/)
    expect(broken.err).toContain('[remote rejected] main -> main (pre-receive hook declined)')
    expect(await page()).toBe(before)
    const [failed] = await deployments()
    expect(failed).toMatchObject({ status: 'failed', source: { kind: 'push' } })

    const sha = await commit(app('v3'), 'fixed')
    const good = await git(['push', 'berth', 'main'])
    expect(good.code, good.err).toBe(0)
    expect(good.err).toContain('remote: building v3')
    const [latest] = await deployments()
    expect(latest).toMatchObject({ status: 'succeeded', commit: sha })
    expect(await page()).toBe(`v3 ${latest!.id}`)
  }, 300_000)

  it('a pushed PHP release sees the settings and secrets; a change shows without a failed request', async () => {
    await git(['rm', '--quiet', 'package.json', 'build.js', 'server.js'])
    const sha = await commit({ 'index.php': ENV_PHP }, 'php')
    const pushed = await git(['push', 'berth', 'main'])
    expect(pushed.code, pushed.err).toBe(0)
    const [latest] = await deployments()
    expect(latest).toMatchObject({ status: 'succeeded', commit: sha })
    expect((await call('GET', '')).json.data.app).toMatchObject({ runtime: 'php', release: latest!.id })
    await untilPage('/', shows('hello two', PHP_SECRET_2))
    await noFailedRequest('/', [shows('hello two', PHP_SECRET_2), shows('hello three', PHP_SECRET_1)], async () => {
      await Bun.sleep(300)
      const changed = await call('PATCH', 'env/', { variables: { GREETING: 'hello three', DB_PASSWORD: PHP_SECRET_1 } })
      expect(changed.status, changed.text).toBe(200)
      await untilPage('/', shows('hello three', PHP_SECRET_1))
      await Bun.sleep(300)
    })
    await git(['rm', '--quiet', 'index.php'])
  }, 300_000)

  it('a push whose hook gave up while Berth was down is never deployed when Berth comes back', async () => {
    const before = await deployments()
    // The repository's own knob: the hook waits 3 s for Berth instead of 30 minutes.
    await inSite('git --git-dir=/home/site/app.git config berth.pushWaitSeconds 3')
    await berth.kill9()
    const lost = await commit(app('v-lost'), 'pushed while Berth was down')
    const pushed = await git(['push', 'berth', 'main'])
    expect(pushed.code).not.toBe(0)
    expect(pushed.err).toContain('remote: berth: no result after 3 seconds; the push was not deployed and will not be.')
    await berth.restart()
    await inSite('git --git-dir=/home/site/app.git config --unset berth.pushWaitSeconds')
    // The next push deploys (Berth follows the site again); the one the pusher was told failed never does.
    const sha = await commit(app('v5'), 'after the restart')
    const good = await git(['push', 'berth', 'main'])
    expect(good.code, good.err).toBe(0)
    await Bun.sleep(2_000)
    const after = await deployments()
    expect(after.filter((d) => d.commit === lost)).toEqual([])
    expect(after.length).toBe(before.length + 1)
    expect(after[0]).toMatchObject({ status: 'succeeded', commit: sha })
    expect(await page()).toBe(`v5 ${after[0]!.id}`)
  }, 300_000)
})
