import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type Server } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import type { EngineConnection } from '../cluster/types'
import { openEngine } from './engine'
import { EngineLink } from './engine-link'
import { watchSiteEvents } from './events'

// A node's engine as the control plane reaches it (issue 28): over mutual TLS, with the node's
// certificate pinned. Here a TLS listener on loopback passes bytes to this machine's engine, as
// the agent's engine pass-through does; only read-only calls are made.
const dir = mkdtempSync(join(tmpdir(), 'berth-engine-tls-'))
let server: Server
let port = 0
let tls: { ca: string; cert: string; key: string; serverCert: string; serverKey: string }

function openssl(args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
}

beforeAll(async () => {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=test-ca', '-days', '1'])
  for (const [name, ext] of [['server', 'subjectAltName=IP:127.0.0.1'], ['client', 'extendedKeyUsage=clientAuth']] as const) {
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`])
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`)
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`])
  }
  const read = (f: string) => readFileSync(join(dir, f), 'utf8')
  tls = { ca: read('ca.pem'), cert: read('client.pem'), key: read('client.key'), serverCert: read('server.pem'), serverKey: read('server.key') }
  server = createServer({ ca: tls.ca, cert: tls.serverCert, key: tls.serverKey, requestCert: true, rejectUnauthorized: true }, (socket) => {
    const engine = connect({ path: '/var/run/docker.sock' })
    socket.pipe(engine).pipe(socket)
    const end = () => (socket.destroy(), engine.destroy())
    socket.on('error', end).on('close', end)
    engine.on('error', end).on('close', end)
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  port = (server.address() as { port: number }).port
})

afterAll(() => {
  server?.close()
  rmSync(dir, { recursive: true, force: true })
})

function connection(pinned: boolean): EngineConnection {
  return { protocol: 'https', host: '127.0.0.1', port, ca: tls.ca, cert: tls.cert, key: tls.key, checkServerIdentity: () => (pinned ? undefined : new Error('not the pinned certificate')) }
}

describe('an engine over mutual TLS', () => {
  it('answers dockerode and the liveness link', async () => {
    const docker = await openEngine(connection(true))
    expect((await docker.version()).ApiVersion).toMatch(/^\d+\.\d+$/)
    const link = new EngineLink(connection(true), 3_000)
    await link.check()
    await link.check()
    link.close()
  })

  it('refuses an engine whose certificate is not the pinned one', async () => {
    await expect((await openEngine(connection(false))).version()).rejects.toThrow()
    await expect(new EngineLink(connection(false), 3_000).check()).rejects.toThrow()
  })

  it('follows its events', async () => {
    const reachable: boolean[] = []
    const watch = watchSiteEvents({ socketPath: connection(true), instanceId: 'nobody-has-this-id', log: memoryLogger() }, { onEvent: () => {}, onReconnect: () => {}, onReachable: (r) => reachable.push(r) })
    try {
      const deadline = Date.now() + 5_000
      while (reachable.length === 0 && Date.now() < deadline) await Bun.sleep(20)
      expect(reachable).toEqual([true])
    } finally {
      watch.close()
    }
  })
})

describe('a compiled binary reaching an engine over TLS', () => {
  // `berth sites move` printed Node's url.parse() deprecation (DEP0169) on stderr (issue 36): the
  // compiled binary has no node_modules in its paths, so Bun reports docker-modem's calls. A probe
  // compiled as dist/berth is (Bun.build, compile) makes the control plane's calls to a node's engine.
  it('prints no deprecation warning', async () => {
    const probe = join(dir, 'probe.ts')
    writeFileSync(join(dir, 'connection.json'), JSON.stringify({ ...connection(true), checkServerIdentity: undefined }))
    writeFileSync(probe, [
      `import { openEngine } from ${JSON.stringify(join(import.meta.dirname, 'engine.ts'))}`,
      `const connection = { ...(await Bun.file(process.argv[2]).json()), checkServerIdentity: () => undefined }`,
      'const docker = await openEngine(connection)',
      'const { ApiVersion } = await docker.version()',
      'await docker.listContainers({ all: true, filters: { label: ["nobody-has-this-label"] } })',
      'console.log(ApiVersion)',
    ].join('\n'))
    const built = await Bun.build({ entrypoints: [probe], compile: { outfile: join(dir, 'probe') }, target: 'bun', format: 'esm' })
    expect(built.success, built.logs.join('\n')).toBe(true)
    // Spawned, not spawnSync: the TLS listener answering it runs on this thread.
    const run = Bun.spawn([join(dir, 'probe'), join(dir, 'connection.json')], { env: { PATH: process.env.PATH! }, stdout: 'pipe', stderr: 'pipe' })
    const [code, stdout, stderr] = await Promise.all([run.exited, new Response(run.stdout).text(), new Response(run.stderr).text()])
    expect({ code, stdout: stdout.trim() }, stderr).toEqual({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+$/) })
    expect(stderr).not.toContain('DeprecationWarning')
  }, 120_000)
})
