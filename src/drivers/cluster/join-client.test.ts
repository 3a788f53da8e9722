import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkControlPlane, NotTheControlPlaneError, parseFingerprint, postJoin } from './join-client'
import { certificateFingerprint, ClusterPki, readJoinTls, type JoinTls } from './pki'
import type { JoinRequest } from './types'

/**
 * The node's side of the join (issue 36, item 4): TLS pinned to the fingerprint `berth nodes
 * token` prints. A box that answers the join URL with another certificate gets nothing: not the
 * token, not the request.
 */
let dir: string
let real: JoinTls
let fake: JoinTls
const received: string[] = []
const servers: ReturnType<typeof Bun.serve>[] = []

const REQUEST: JoinRequest = { token: 'bnj_secret', csr: 'csr', name: 'n1', address: '10.0.0.2', agentPort: 7710, memoryBytes: 1, cpus: 1 }

function serve(tls: JoinTls): string {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    tls: { cert: tls.cert, key: tls.key },
    async fetch(request) {
      received.push(await request.text())
      return Response.json({ nodeId: 'node_x', certificate: 'c', clientCa: 'ca', swarmToken: 's', managerAddress: '10.0.0.1', controlAddress: '10.0.0.1', firewall: null })
    },
  })
  servers.push(server)
  return `https://127.0.0.1:${server.port}`
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-join-client-'))
  await ClusterPki.open(join(dir, 'real'))
  await ClusterPki.open(join(dir, 'fake'))
  real = readJoinTls(join(dir, 'real'))!
  fake = readJoinTls(join(dir, 'fake'))!
})

afterAll(() => {
  for (const s of servers) s.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

describe('the join, pinned to the control plane\'s certificate', () => {
  it('makes one join certificate per control plane, kept across opens, its fingerprint the SHA-256 of its DER', async () => {
    expect(real.fingerprint).toBe(certificateFingerprint(real.cert))
    expect(real.fingerprint).not.toBe(fake.fingerprint)
    const again = await ClusterPki.open(join(dir, 'real'))
    expect(again.joinTls().fingerprint).toBe(real.fingerprint)
  })

  it('posts to the control plane whose certificate is the pinned one', async () => {
    const url = serve(real)
    const answer = await postJoin(url, real.fingerprint, REQUEST)
    expect(answer.nodeId).toBe('node_x')
    expect(received.pop()).toContain('bnj_secret')
  })

  it('sends nothing to a box that shows another certificate, and says so', async () => {
    const url = serve(fake)
    received.length = 0
    const refused = await postJoin(url, real.fingerprint, REQUEST).catch((e: Error) => e)
    expect(refused).toBeInstanceOf(NotTheControlPlaneError)
    expect((refused as Error).message).toContain(`not the control plane's (${real.fingerprint})`)
    expect((refused as Error).message).toContain('Nothing was sent to it')
    expect(received).toEqual([])
    await expect(checkControlPlane(url, real.fingerprint)).rejects.toBeInstanceOf(NotTheControlPlaneError)
  })

  it('refuses a plain http:// URL before connecting', async () => {
    await expect(checkControlPlane('http://127.0.0.1:1', real.fingerprint)).rejects.toThrow(/not https:\/\/.*berth nodes token/)
  })

  it('reads a fingerprint as berth nodes token prints it, and nothing else', () => {
    const hex = 'ab'.repeat(32)
    expect(parseFingerprint(`sha256:${hex}`)).toBe(hex)
    expect(parseFingerprint(hex.toUpperCase().match(/../g)!.join(':'))).toBe(hex)
    expect(parseFingerprint('sha256:abc')).toBeNull()
    expect(parseFingerprint('')).toBeNull()
  })
})
