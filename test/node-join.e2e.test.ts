import { spawn, spawnSync } from 'bun'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { clusterJoinHandler } from '../src/api/cluster/join'
import { hashToken, JoinService } from '../src/domain/cluster/join'
import { NodesRepository } from '../src/domain/cluster/repository'
import { ClusterPki } from '../src/drivers/cluster/pki'
import { ensureManager, swarmInfo, swarmManagerOn } from '../src/drivers/runtime/swarm-membership'
import { engineSecurity, noNewPrivilegesAdvice } from '../src/drivers/runtime/swarm/hardening'
import { systemClock } from '../src/lib/clock'
import { memoryLogger } from '../src/lib/logger'
import { migrate } from '../src/store/migrate'
import { openStore, type Store } from '../src/store/store'
import { BINARY } from './helpers/binary'
import { startPrivateEngines, type PrivateEngines } from './helpers/private-dockerd'

/**
 * `berth nodes token`, `berth node join` and `berth node serve` as a hoster runs them, the
 * compiled binary on two private engines (never the shared one): engine 0 is the control plane's
 * (the Swarm manager, 10.249.8.1 = cluster.address), engine 1 the new node's (10.249.8.2), engine 2
 * another box's (a replayed token). The
 * control plane's join route is served by the test process on loopback, over the store that
 * `berth nodes token` wrote to.
 */
let lab: PrivateEngines
let dir: string
let store: Store
let pki: ClusterPki
let url: string
/** The join certificate's fingerprint, as berth nodes token prints it. */
let pin: string
let server: ReturnType<typeof Bun.serve>
/** Runs the binary without blocking this process, which serves the join route meanwhile. */
const run = async (args: string[], env: Record<string, string> = {}) => {
  const p = spawn([BINARY, ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '', ...env } })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out, err }
}
const clusterEnv = () => ({ BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: lab.engines[0]!.address, BERTH_SERVER_DATA_DIR: join(dir, 'control') })

beforeAll(async () => {
  // BERTH_JOIN_LAB_NAME runs a second copy beside another worktree's (its first 8 characters name the links: make them differ).
  lab = await startPrivateEngines(process.env.BERTH_JOIN_LAB_NAME ?? 'berth-join-t', 3, 8)
  dir = mkdtempSync(join(tmpdir(), 'berth-node-join-'))
  store = openStore(join(dir, 'control', 'berth.db'))
  migrate(store)
  pki = await ClusterPki.open(join(dir, 'control'))
  const manager = lab.engines[0]!
  await ensureManager(manager.socket, manager.address)
  const joins = new JoinService(new NodesRepository(store), pki, swarmManagerOn(manager.socket), systemClock, { controlAddress: manager.address, tokenMinutes: 60, firewall: null })
  // Over TLS with the control plane's join certificate, as berth serve's join listener.
  const joinTls = pki.joinTls()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert: joinTls.cert, key: joinTls.key }, fetch: clusterJoinHandler(joins, memoryLogger()) })
  url = `https://127.0.0.1:${server.port}`
  pin = `sha256:${joinTls.fingerprint}`
}, 120_000)

afterAll(async () => {
  await server?.stop(true)
  store?.close()
  lab?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('joining a node with the binary', () => {
  it('refuses a token while the cluster is off', async () => {
    const res = await run(['nodes', 'token', '--data-dir', join(dir, 'control')])
    expect(res.code).toBe(1)
    expect(res.err).toContain('cluster.enabled is false')
  })

  it('joins with a token from berth nodes token, once; the node serves the control address only', async () => {
    const tokenRun = await run(['nodes', 'token', '--json'], clusterEnv())
    expect(tokenRun.code, tokenRun.err).toBe(0)
    const { token, command, fingerprint } = JSON.parse(tokenRun.out) as { token: string; command: string; fingerprint: string }
    expect(token).toMatch(/^bnj_[A-Za-z0-9_-]{43}$/)
    expect(command).toContain(`--token ${token}`)
    expect(fingerprint).toBe(pin)
    expect(command).toContain(`https://${lab.engines[0]!.address}:7709 --token ${token} --fingerprint ${pin}`)
    const worker = lab.engines[1]!
    const data = join(dir, 'node')
    const args = ['node', 'join', url, '--token', token, '--fingerprint', pin, '--address', worker.address, '--port', '7710', '--name', 'worker-1', '--data', data, '--docker-socket', worker.socket, '--no-systemd', '--json']
    const joined = await run(args)
    expect(joined.code, joined.err).toBe(0)
    const answer = JSON.parse(joined.out) as { node_id: string; swarm_node_id: string; data: string; warnings: string[] }
    expect(answer.node_id).toMatch(/^node_/)
    // An engine that would run sites without no-new-privileges (20.10 without the daemon-wide setting) is warned about, with the fix.
    const advice = noNewPrivilegesAdvice(await engineSecurity(worker.socket), 'node')
    expect(answer.warnings).toEqual(advice ? [expect.stringContaining('"no-new-privileges": true to /etc/docker/daemon.json')] : [])
    const engine = await swarmInfo(worker.socket)
    expect(engine).toMatchObject({ state: 'active', manager: false, nodeId: answer.swarm_node_id })
    for (const name of ['node.json', 'node.key', 'node.pem', 'client-ca.pem']) expect(statSync(join(data, name)).mode & 0o777, name).toBe(0o600)
    expect(statSync(data).mode & 0o777).toBe(0o700)
    expect(() => statSync(join(data, 'swarm-token'))).toThrow()
    const node = new NodesRepository(store).find(answer.node_id)!
    // Joining until its agent first answers (no berth serve asks here): placement skips it.
    expect(node).toMatchObject({ name: 'worker-1', address: worker.address, agentPort: 7710, state: 'joining' })
    expect(node.memoryBytes).toBeGreaterThan(0)

    // The same token again, from another box (engine 2, in no Swarm): the control plane refuses it, exit 2.
    const spare = lab.engines[2]!
    const replayed = await run(['node', 'join', url, '--token', token, '--fingerprint', pin, '--address', spare.address, '--name', 'worker-2', '--data', join(dir, 'node2'), '--docker-socket', spare.socket, '--no-systemd'])
    expect(replayed.code).toBe(2)
    expect(replayed.err).toContain('unknown, used or expired')
    expect((await swarmInfo(spare.socket)).state).toBe('inactive')
    // Another box under a name the first has (two boxes of one host name): refused, exit 2, nothing
    // joined, the token still good for a join under another --name.
    const fresh = JSON.parse((await run(['nodes', 'token', '--json'], clusterEnv())).out) as { token: string }
    const sameName = await run(['node', 'join', url, '--token', fresh.token, '--fingerprint', pin, '--address', spare.address, '--name', 'worker-1', '--data', join(dir, 'node2'), '--docker-socket', spare.socket, '--no-systemd'])
    expect(sameName.code).toBe(2)
    expect(sameName.err).toContain("A node named 'worker-1' is in the cluster already")
    expect(sameName.err).toContain('--name')
    expect((await swarmInfo(spare.socket)).state).toBe('inactive')
    expect(new NodesRepository(store).tokenUsable(hashToken(fresh.token), Date.now())).toBe(true)
    // A second join from the joined folder is refused before anything is sent.
    const again = await run(args)
    expect(again.code).toBe(1)
    expect(again.err).toContain('has joined')

    // berth node serve from the joined folder, inside the node's network namespace.
    const serve = spawn(['ip', 'netns', 'exec', worker.namespace, BINARY, 'node', 'serve', '--data', data], { stdout: 'pipe', stderr: 'pipe' })
    try {
      const control = pki.controlTls()
      writeFileSync(join(dir, 'node-ca.pem'), control.nodeCa)
      writeFileSync(join(dir, 'control.pem'), control.cert)
      writeFileSync(join(dir, 'control.key'), control.key, { mode: 0o600 })
      const curl = (namespace: string) => spawnSync(['ip', 'netns', 'exec', namespace, 'curl', '-sS', '--max-time', '5', '--retry', '20', '--retry-connrefused', '--retry-delay', '1',
        '--cacert', join(dir, 'node-ca.pem'), '--cert', join(dir, 'control.pem'), '--key', join(dir, 'control.key'), `https://${worker.address}:7710/v1/info`], { stdout: 'pipe', stderr: 'pipe' })
      const fromControl = curl(lab.engines[0]!.namespace)
      expect(fromControl.exitCode, fromControl.stderr.toString()).toBe(0)
      expect(JSON.parse(fromControl.stdout.toString())).toMatchObject({ nodeId: answer.node_id, swarmNodeId: answer.swarm_node_id })
      // The control plane's certificate from another address (the node's own) is refused.
      const fromElsewhere = curl(worker.namespace)
      expect(JSON.parse(fromElsewhere.stdout.toString())).toMatchObject({ error: { code: 'forbidden' } })
    } finally {
      serve.kill('SIGTERM')
      expect(await serve.exited).toBe(0)
    }
  }, 120_000)
})
