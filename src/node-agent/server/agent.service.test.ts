import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as x509 from '@peculiar/x509'
import Docker from 'dockerode'
import { memoryLogger } from '../../lib/logger'
import { AgentLink } from '../client/link'
import { ClusterPki, makeNodeKey } from '../../drivers/cluster/pki'
import { NodeRefusedError, NodeUnreachableError, type AgentTls, type ClusterNode } from '../../drivers/cluster/types'
import { KernelForwards } from './kernel-forwards'
import { startAgent, type RunningAgent } from './server'

const SOCKET = process.env.DOCKER_SOCKET ?? '/var/run/docker.sock'
const TEST_LABEL = 'berth-test.cluster-agent'

/**
 * A real agent on loopback, under mutual TLS with a real PKI, in front of the shared engine
 * (read-only calls and one container of the test's own). The control address is 127.0.0.1 for
 * `agent`; `strict` names 127.0.0.2, so this process (connecting from 127.0.0.1) is a stranger to it.
 */
let dir: string
let pki: ClusterPki
let agentTls: AgentTls
let fingerprint: string
let agent: RunningAgent
let strict: RunningAgent
const link = () => new AgentLink(pki.controlTls(), { answerTimeoutMs: 3000 })
const nodeOf = (a: RunningAgent, over: Partial<ClusterNode> = {}): ClusterNode => ({
  id: 'node_test', name: 'worker-1', address: '127.0.0.1', agentPort: a.port, swarmNodeId: null, certFingerprint: fingerprint,
  certSerial: '01', state: 'active', memoryBytes: 0, cpus: 0, joinedAt: 0, lastSeenAt: null, ...over,
})

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-agent-'))
  pki = await ClusterPki.open(dir)
  const { keyPem, csrPem } = await makeNodeKey('worker-1')
  const signed = await pki.signNode(csrPem, 'node_test', '127.0.0.1')
  fingerprint = signed.fingerprint
  agentTls = { clientCa: pki.clientCaPem, cert: signed.certificate, key: keyPem }
  const base = { nodeId: 'node_test', address: '127.0.0.1', agentPort: 0, tls: agentTls, dockerSocket: SOCKET, log: memoryLogger() }
  agent = await startAgent({ ...base, controlAddress: '127.0.0.1' })
  strict = await startAgent({ ...base, controlAddress: '127.0.0.2' })
})

afterAll(async () => {
  await agent?.stop()
  await strict?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('the node agent under mutual TLS', () => {
  it('answers the control plane\'s certificate: its info, from the local engine', async () => {
    const res = await link().fetch(nodeOf(agent), '/v1/info')
    expect(res.status).toBe(200)
    const info = (await res.json()) as Record<string, unknown>
    expect(info).toMatchObject({ nodeId: 'node_test', swarmNodeId: null })
    expect(info.memoryBytes).toBeGreaterThan(0)
    expect(info.engineVersion).toMatch(/\d+\.\d+/)
  })

  it('refuses a caller with the node\'s own certificate, a self-signed one, or none', async () => {
    const url = `https://127.0.0.1:${agent.port}/v1/info`
    const nodeCa = pki.controlTls().nodeCa
    const selfSigned = await selfSignedPair()
    for (const [what, tls] of [
      ['the node certificate', { ca: nodeCa, cert: agentTls.cert, key: agentTls.key }],
      ['a self-signed certificate', { ca: nodeCa, ...selfSigned }],
      ['no certificate', { ca: nodeCa }],
    ] as const) {
      await expect(fetch(url, { tls } as RequestInit), what).rejects.toThrow()
    }
  })

  it('refuses the control plane\'s certificate from another address than the control address', async () => {
    const res = await link().fetch(nodeOf(strict), '/v1/info')
    expect(res.status).toBe(403)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden')
    // The engine pass-through closes such a connection before it reaches the engine.
    await expect(new Docker(link().engineOptions(nodeOf(strict)) as Docker.DockerOptions).ping()).rejects.toThrow()
  })

  it('answers 503 engine_unavailable for its info while its engine does not answer', async () => {
    const engineless = await startAgent({ nodeId: 'node_test', address: '127.0.0.1', agentPort: 0, controlAddress: '127.0.0.1', tls: agentTls, dockerSocket: join(dir, 'no-engine.sock'), log: memoryLogger() })
    try {
      const res = await link().fetch(nodeOf(engineless), '/v1/info')
      expect(res.status).toBe(503)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('engine_unavailable')
    } finally {
      await engineless.stop()
    }
  })

  it('answers homes 501 until they are wired, and unknown routes 404', async () => {
    const homes = await link().fetch(nodeOf(agent), '/v1/homes/berth-x-home/usage')
    expect(homes.status).toBe(501)
    expect((await link().fetch(nodeOf(agent), '/v1/nothing')).status).toBe(404)
  })
})

describe('the control plane\'s link', () => {
  it('refuses an agent whose certificate is not the recorded one, or not of the node CA', async () => {
    const wrongPin = nodeOf(agent, { certFingerprint: 'ab'.repeat(32) })
    await expect(link().fetch(wrongPin, '/v1/info')).rejects.toBeInstanceOf(NodeRefusedError)
    await expect(new Docker(link().engineOptions(wrongPin) as Docker.DockerOptions).ping()).rejects.toBeInstanceOf(NodeRefusedError)
    // An impostor agent: same id and address, a certificate of its own CA.
    const otherDir = mkdtempSync(join(tmpdir(), 'berth-agent-other-'))
    try {
      const other = await ClusterPki.open(otherDir)
      const { keyPem, csrPem } = await makeNodeKey('impostor')
      const signed = await other.signNode(csrPem, 'node_test', '127.0.0.1')
      const impostor = await startAgent({ nodeId: 'node_test', address: '127.0.0.1', agentPort: 0, controlAddress: '127.0.0.1', tls: { clientCa: pki.clientCaPem, cert: signed.certificate, key: keyPem }, dockerSocket: SOCKET, log: memoryLogger() })
      try {
        const err = await link().fetch(nodeOf(impostor), '/v1/info').catch((e: unknown) => e)
        expect(err).toBeInstanceOf(NodeRefusedError)
        // Even with its fingerprint recorded, its certificate does not chain to this cluster's node CA.
        const pinned = await link().fetch(nodeOf(impostor, { certFingerprint: signed.fingerprint }), '/v1/info').catch((e: unknown) => e)
        expect(pinned).toBeInstanceOf(NodeRefusedError)
      } finally {
        await impostor.stop()
      }
    } finally {
      rmSync(otherDir, { recursive: true, force: true })
    }
  })

  it('refuses a removed node without connecting, and says unreachable for a node that does not answer', async () => {
    const silent = createServer((s) => s.destroy())
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    let connections = 0
    silent.on('connection', () => connections++)
    try {
      const removed = nodeOf(agent, { agentPort: (silent.address() as { port: number }).port, state: 'removed' })
      await expect(link().fetch(removed, '/v1/info')).rejects.toBeInstanceOf(NodeRefusedError)
      expect(() => link().engineOptions(removed)).toThrow(NodeRefusedError)
      expect(connections).toBe(0)
      await expect(link().fetch({ ...removed, state: 'active' }, '/v1/info')).rejects.toBeInstanceOf(NodeUnreachableError)
    } finally {
      silent.close()
    }
    // A port where nothing listens.
    const closed = createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as { port: number }).port
    await new Promise<void>((r) => closed.close(() => r()))
    await expect(link().fetch(nodeOf(agent, { agentPort: port }), '/v1/info')).rejects.toBeInstanceOf(NodeUnreachableError)
  })

  it('bounds the wait for an agent that accepts and never answers', async () => {
    const mute: Server = createServer(() => {})
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r))
    try {
      const started = performance.now()
      const slow = new AgentLink(pki.controlTls(), { answerTimeoutMs: 500 })
      await expect(slow.fetch(nodeOf(agent, { agentPort: (mute.address() as { port: number }).port }), '/v1/info')).rejects.toBeInstanceOf(NodeUnreachableError)
      expect(performance.now() - started).toBeLessThan(3000)
    } finally {
      mute.close()
    }
  })
})

describe('the engine pass-through', () => {
  it('carries dockerode: a ping, and an exec with its input over the hijacked stream', async () => {
    const docker = new Docker(link().engineOptions(nodeOf(agent)) as Docker.DockerOptions)
    expect(String(await docker.ping())).toBe('OK')
    const container = await docker.createContainer({ Image: 'berth/static:1', Entrypoint: ['sleep', '120'], Cmd: [], Labels: { [TEST_LABEL]: 'exec' }, HostConfig: { NetworkMode: 'none', AutoRemove: false } })
    try {
      await container.start()
      const exec = await container.exec({ Cmd: ['sh', '-c', 'cat; echo end-of-input'], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false })
      const stream = (await exec.start({ hijack: true, stdin: true })) as NodeJS.ReadWriteStream
      const out: Buffer[] = []
      const sink = new (await import('node:stream')).PassThrough()
      sink.on('data', (d: Buffer) => out.push(d))
      docker.modem.demuxStream(stream, sink, sink)
      const ended = new Promise<void>((r) => {
        stream.on('end', r)
        stream.on('close', r)
      })
      stream.write('through the agent\n')
      stream.end()
      await ended
      expect(Buffer.concat(out).toString()).toBe('through the agent\nend-of-input\n')
      expect((await exec.inspect()).ExitCode).toBe(0)
    } finally {
      await container.remove({ force: true })
    }
  })
})

describe('the forwards', () => {
  let echo: Server
  let echoPort: number
  beforeAll(async () => {
    echo = createServer((s) => s.on('data', (d) => s.write(`echo:${d}`)))
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r))
    echoPort = (echo.address() as { port: number }).port
  })
  afterAll(() => void echo.close())

  it('opens a port that pipes the control plane\'s connections to the target, idempotently, and closes it', async () => {
    const put = (target: unknown) => link().fetch(nodeOf(agent), '/v1/forwards/shop', { method: 'PUT', body: JSON.stringify(target), headers: { 'content-type': 'application/json' } })
    const first = await put({ address: '127.0.0.1', port: echoPort })
    expect(first.status).toBe(200)
    const { port } = (await first.json()) as { port: number }
    expect(await roundTrip(port, 'hello')).toBe('echo:hello')
    expect(((await (await put({ address: '127.0.0.1', port: echoPort })).json()) as { port: number }).port).toBe(port)
    const bad = await put({ address: 'not-an-ip', port: echoPort })
    expect(bad.status).toBe(422)
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('address')
    expect((await link().fetch(nodeOf(agent), '/v1/forwards/shop', { method: 'DELETE' })).status).toBe(204)
    await expect(roundTrip(port, 'again')).rejects.toThrow()
  })

  it('follows a new target on the same port', async () => {
    const second = createServer((s) => s.on('data', (d) => s.write(`second:${d}`)))
    await new Promise<void>((r) => second.listen(0, '127.0.0.1', r))
    try {
      const port = await agent.forwards.open('moved', { address: '127.0.0.1', port: echoPort })
      expect(await roundTrip(port, 'a')).toBe('echo:a')
      expect(await agent.forwards.open('moved', { address: '127.0.0.1', port: (second.address() as { port: number }).port })).toBe(port)
      expect(await roundTrip(port, 'b')).toBe('second:b')
    } finally {
      await agent.forwards.close('moved')
      second.close()
    }
  })

  it('relays through its listener when the kernel rules cannot be set, warning once', async () => {
    const log = memoryLogger()
    const missing = { iptables: join(dir, 'no-iptables'), restore: join(dir, 'no-iptables-restore') }
    const kernel = new KernelForwards({ node: '127.0.0.1', control: '127.0.0.1', log }, missing)
    const relaying = await startAgent({ nodeId: 'node_test', address: '127.0.0.1', agentPort: 0, controlAddress: '127.0.0.1', tls: agentTls, dockerSocket: SOCKET, kernel, log })
    try {
      const port = await relaying.forwards.open('shop', { address: '127.0.0.1', port: echoPort })
      expect(await roundTrip(port, 'relayed')).toBe('echo:relayed')
      await relaying.forwards.open('blog', { address: '127.0.0.1', port: echoPort })
      await kernel.keep()
      const warnings = log.lines.filter((l) => String(l.msg).startsWith('the kernel forwards could not be set'))
      expect(warnings).toHaveLength(1)
      expect(String(warnings[0]!.error)).toContain('not installed')
    } finally {
      await relaying.stop()
    }
  })

  it('accepts connections from the control address only', async () => {
    // strict's control address is 127.0.0.2: a connection from 127.0.0.1 is closed unanswered.
    const port = await strict.forwards.open('shop', { address: '127.0.0.1', port: echoPort })
    try {
      await expect(roundTrip(port, 'stranger')).rejects.toThrow()
      expect(await roundTrip(port, 'control', '127.0.0.2')).toBe('echo:control')
    } finally {
      await strict.forwards.close('shop')
    }
  })
})

/** Connects to 127.0.0.1:port (from `from`), sends `text`, resolves with the first answer; rejects when closed unanswered. */
function roundTrip(port: number, text: string, from = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, localAddress: from }, () => s.write(text))
    s.setTimeout(3000, () => (s.destroy(), reject(new Error('no answer'))))
    s.on('data', (d) => (s.destroy(), resolve(d.toString())))
    s.on('error', reject)
    s.on('close', () => reject(new Error('closed unanswered')))
  })
}

/** A certificate and key that no cluster CA signed. */
async function selfSignedPair(): Promise<{ cert: string; key: string }> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair
  const cert = await x509.X509CertificateGenerator.createSelfSigned({ serialNumber: '01', name: 'CN=berth-control', notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 86_400_000), signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' }, keys })
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey))
  return { cert: cert.toString('pem'), key: `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n` }
}
