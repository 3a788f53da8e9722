import { spawn } from 'bun'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * SSH and the claim flow on the compiled binary, a real Docker engine and the real OpenSSH
 * client: buy a vps site, let a key in, run a command over SSH, read a claim token over that
 * session and trade it for a site-scoped key.
 */
const keys = mkdtempSync(join(tmpdir(), 'berth-ssh-'))
// A port block of its own, so parallel runs on the machine do not collide.
const firstPort = 30_000 + Math.floor(Math.random() * 300) * 100
let berth: Berth
let vps: { slug: string; key: string }
let shared: { slug: string; key: string }

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_CONTAINERS_RECONCILE_SECONDS: '2', BERTH_SSH_PORT_RANGE: `${firstPort}-${firstPort + 99}`, BERTH_SSH_HOST: '127.0.0.1' } })
  instanceOf(berth)
  const [a, b] = await Promise.all([
    buyDirect(berth.url, { slug: uniqueSlug('ssh'), sku: 'svc_business_monthly' }),
    buyDirect(berth.url, { slug: uniqueSlug('nossh'), sku: 'svc_starter_monthly' }),
  ])
  vps = { slug: a.data.site_slug, key: a.data.api_key }
  shared = { slug: b.data.site_slug, key: b.data.api_key }
  expect(await waitForSite(berth.url, vps.key, vps.slug)).toBe('active')
  expect(await waitForSite(berth.url, shared.key, shared.slug)).toBe('active')
  for (const k of ['ed25519', 'rsa1024']) {
    const args = k === 'ed25519' ? ['-t', 'ed25519'] : ['-t', 'rsa', '-b', '1024']
    const made = spawn(['ssh-keygen', '-q', ...args, '-N', '', '-C', `agent ${k}`, '-f', join(keys, k)])
    expect(await made.exited).toBe(0)
  }
}, 120_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  rmSync(keys, { recursive: true, force: true })
})

/** Runs `command` over SSH with the returned connection info; strict host key checking on. */
async function sshRun(info: { host: string; port: number; username: string; known_hosts: string[] }, command: string, extra: string[] = []) {
  const knownHosts = join(keys, 'known_hosts')
  await Bun.write(knownHosts, `${info.known_hosts.join('\n')}\n`)
  const proc = spawn(['ssh', '-i', join(keys, 'ed25519'), '-p', String(info.port), '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'ConnectTimeout=10', ...extra, `${info.username}@${info.host}`, command], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err }
}

const sshInfo = async (slug: string, key: string) => api(berth.url, 'GET', `/sites/${slug}/ssh/`, { key })

describe('SSH into a vps site, then claim it', () => {
  it('injects an ed25519 key and runs a command over real SSH; the claim token read over SSH gives a site-scoped key', async () => {
    const info = await sshInfo(vps.slug, vps.key)
    expect(info.status, info.text).toBe(200)
    expect(info.json.data).toMatchObject({ host: '127.0.0.1', username: 'site', port: expect.any(Number) })
    expect(info.json.data.port).toBeGreaterThanOrEqual(firstPort)
    expect(info.json.data.command).toBe(`ssh -p ${info.json.data.port} site@127.0.0.1`)
    expect(info.json.data.host_keys[0].fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/)

    const publicKey = readFileSync(join(keys, 'ed25519.pub'), 'utf8')
    const added = await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key, body: { public_key: publicKey } })
    expect(added.status, added.text).toBe(200)
    expect(added.json.data).toMatchObject({ type: 'ssh-ed25519', added: true, comment: 'agent ed25519' })
    const again = await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key, body: { public_key: publicKey } })
    expect(again.json.data.added).toBe(false)
    const listed = await api(berth.url, 'GET', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key })
    expect(listed.json.data.map((k: { fingerprint: string }) => k.fingerprint)).toEqual([added.json.data.fingerprint])

    const who = await sshRun(info.json.data, 'id -u; pwd; test -f public/index.php && echo has-index')
    expect(who.err).not.toContain('REMOTE HOST IDENTIFICATION HAS CHANGED')
    expect(who.code, who.err).toBe(0)
    expect(who.out).toBe('1000\n/home/site\nhas-index\n')

    const requested = await api(berth.url, 'POST', '/keys/claim/request/', { body: { site_slug: vps.slug } })
    expect(requested.status, requested.text).toBe(201)
    const read = await sshRun(info.json.data, 'cat ~/.svc/.claim_token; stat -c %a ~/.svc/.claim_token')
    const [token, mode] = read.out.trim().split('\n')
    expect(mode).toBe('600')
    const claimed = await api(berth.url, 'POST', '/keys/claim/', { body: { claim_token: token } })
    expect(claimed.status, claimed.text).toBe(201)
    expect(claimed.json.data).toMatchObject({ site_slug: vps.slug, site_scoped: true, scopes: ['read', 'write'] })
    const siteKey = claimed.json.data.api_key as string

    const files = await api(berth.url, 'GET', `/sites/${vps.slug}/files/?path=public`, { key: siteKey })
    expect(files.status, files.text).toBe(200)
    expect(files.json.data.entries ?? files.json.data).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'index.php' })]))
    expect((await api(berth.url, 'GET', `/sites/${shared.slug}/`, { key: siteKey })).status).toBe(404)
    expect((await api(berth.url, 'GET', '/keys/', { key: siteKey })).status).toBe(403)
    expect((await api(berth.url, 'GET', '/auth/whoami/', { key: siteKey })).status).toBe(403)
    expect((await api(berth.url, 'POST', '/keys/create/', { key: siteKey, body: { name: 'more' } })).status).toBe(403)
    // The same token again is refused.
    expect((await api(berth.url, 'POST', '/keys/claim/', { body: { claim_token: token } })).status).toBe(422)
  })

  it('refuses password logins at the server', async () => {
    const info = (await sshInfo(vps.slug, vps.key)).json.data
    const res = await sshRun(info, 'true', ['-o', 'PubkeyAuthentication=no', '-o', 'PreferredAuthentications=password,keyboard-interactive'])
    expect(res.code).toBe(255)
    expect(res.err).toContain('Permission denied (publickey)')
  })

  it('keeps the port and the host key when the container is recreated', async () => {
    const before = (await sshInfo(vps.slug, vps.key)).json.data
    const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${vps.slug}`] } })
    await docker.getContainer(container!.Id).remove({ force: true })
    let after = before
    for (let i = 0; i < 100; i++) {
      await Bun.sleep(200)
      const now = await sshInfo(vps.slug, vps.key)
      if (now.json.data.host_keys.length > 0) {
        after = now.json.data
        break
      }
    }
    expect(after.port).toBe(before.port)
    expect(after.host_keys).toEqual(before.host_keys)
    let res = await sshRun(after, 'echo back')
    for (let i = 0; i < 20 && res.code !== 0; i++) {
      await Bun.sleep(250)
      res = await sshRun(after, 'echo back')
    }
    expect(res.out).toBe('back\n')
  })

  it('refuses bad keys with 422 and changes nothing', async () => {
    const ed = readFileSync(join(keys, 'ed25519.pub'), 'utf8').trim()
    const cases = [
      ['malformed', 'ssh-ed25519 not-base64!!'],
      ['two keys', `${ed}\n${ed}`],
      ['1024-bit RSA', readFileSync(join(keys, 'rsa1024.pub'), 'utf8')],
      ['a private key', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----'],
    ]
    for (const [name, publicKey] of cases) {
      const res = await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key, body: { public_key: publicKey } })
      expect(res.status, name).toBe(422)
      expect(res.json.error.param, name).toBe('public_key')
    }
    expect((await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key, body: {} })).json.error.param).toBe('public_key')
    const listed = await api(berth.url, 'GET', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key })
    expect(listed.json.data).toHaveLength(1)
    expect((await siteShell(berth, vps.slug, 'wc -l < .ssh/authorized_keys')).output.trim()).toBe('1')
  })

  it('answers 403 for SSH on a shared plan and 404 for another account', async () => {
    const info = await sshInfo(shared.slug, shared.key)
    expect(info.status).toBe(403)
    expect(info.json.error.message).toContain('no SSH')
    const publicKey = readFileSync(join(keys, 'ed25519.pub'), 'utf8')
    expect((await api(berth.url, 'POST', `/sites/${shared.slug}/ssh/keys/`, { key: shared.key, body: { public_key: publicKey } })).status).toBe(403)
    expect((await sshInfo(vps.slug, shared.key)).status).toBe(404)
    expect((await api(berth.url, 'POST', `/sites/${vps.slug}/ssh/keys/`, { key: shared.key, body: { public_key: publicKey } })).status).toBe(404)
  })

  it('removes a key, after which it no longer logs in', async () => {
    const info = (await sshInfo(vps.slug, vps.key)).json.data
    const [key] = (await api(berth.url, 'GET', `/sites/${vps.slug}/ssh/keys/`, { key: vps.key })).json.data
    const removed = await api(berth.url, 'DELETE', `/sites/${vps.slug}/ssh/keys/${key.key_id}/`, { key: vps.key })
    expect(removed.status, removed.text).toBe(200)
    expect((await api(berth.url, 'DELETE', `/sites/${vps.slug}/ssh/keys/${key.key_id}/`, { key: vps.key })).status).toBe(404)
    const res = await sshRun(info, 'true')
    expect(res.code).toBe(255)
  })
})
