import { chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LogRotation } from '../../domain/logs/rotation'
import { LogsService } from '../../domain/logs/service'
import type { PlansService } from '../../domain/plans/service'
import { nodeHomes } from '../../drivers/cluster/node-homes'
import { nodeHomePath, type ClusterNode, type NodeLink } from '../../drivers/cluster/types'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { agentHandlers } from '../server/api'
import type { Forwards } from '../server/forwards'
import { routeAgentRequest } from '../server/router'

/**
 * Issue 38, item 3, on a cluster's node: the logs of a site whose home is on another node are
 * rotated through that node's agent (the homes route's `rotate` operation, SiteHome.rotate on the
 * node) and read across the rotated files through it, exactly as on this box. The agent's handler
 * is served by a real Bun.serve on loopback (the link's mutual TLS is the nodes' own test); the
 * container's exec (the servers told to reopen) is recorded.
 */
const root = mkdtempSync(join(tmpdir(), 'berth-remote-rotate-'))
const NODE: ClusterNode = {
  id: 'n1', name: 'worker', address: '127.0.0.1', agentPort: 0, swarmNodeId: null, certFingerprint: '', certSerial: '', state: 'active',
  memoryBytes: 0, cpus: 1, joinedAt: 0, lastSeenAt: null,
}
const agent = agentHandlers({ info: () => Promise.reject(new Error('not in this test')), forwards: {} as Forwards, homes: async (volume) => (volume === 'berth-test-site-home' ? root : null) })
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => routeAgentRequest(agent, req) })
const link: NodeLink = {
  fetch: (_node, path, init) => fetch(`http://127.0.0.1:${server.port}${path}`, init),
  engineOptions: () => {
    throw new Error('not in this test')
  },
}
const homes = nodeHomes({ link, node: (id) => (id === NODE.id ? NODE : null) })
const execs: string[] = []
const runtime = {
  homePath: async (slug: string) => (slug === 'site' ? nodeHomePath(NODE.id, 'berth-test-site-home') : nodeHomePath(NODE.id, 'berth-test-gone-home')),
  exec: async (slug: string) => (execs.push(slug), { exitCode: 0, output: '' }),
} as unknown as ContainerRuntime

afterAll(() => {
  server.stop(true)
  rmSync(root, { recursive: true, force: true })
})

const numbered = (from: number, n: number) => Array.from({ length: n }, (_, i) => `a ${from + i} ${'x'.repeat(80)}\n`).join('')

describe("a node's site logs, through its agent", () => {
  it('are rotated by renaming on the node (keep bounded, owner kept, a planted link never followed) and read across the files', async () => {
    const logs = join(root, 'logs')
    mkdirSync(logs)
    writeFileSync(join(root, 'secret'), 'secret\n')
    symlinkSync(join(root, 'secret'), join(logs, 'error.log'))
    const rotation = new LogRotation({ sites: { listLive: () => [{ slug: 'site' }, { slug: 'gone' }] }, runtime, openHome: homes.openHome, log: memoryLogger(), rotateBytes: 4096, keep: 2 })
    for (let round = 0; round < 3; round++) {
      writeFileSync(join(logs, 'access.log'), numbered(round * 50, 50))
      chownSync(join(logs, 'access.log'), 1000, 1000)
      await rotation.rotateAll()
    }
    writeFileSync(join(logs, 'access.log'), numbered(150, 10))
    expect(readdirSync(logs).sort()).toEqual(['access.log', 'access.log.1', 'access.log.2', 'error.log'])
    expect(readFileSync(join(logs, 'access.log.2'), 'utf8')).toContain('a 50 ')
    expect(lstatSync(join(logs, 'access.log.1')).uid).toBe(1000)
    expect(lstatSync(join(logs, 'error.log')).isSymbolicLink()).toBe(true)
    expect(execs).toEqual(['site', 'site', 'site'])

    const api = new LogsService({ get: () => ({ hosting_type: 'vps' }) } as unknown as PlansService, runtime, homes.openHome, undefined, undefined, 2)
    const read = async (q: { lines?: number; search?: string }) => (await api.read({ slug: 'site', planSlug: 'business' } as SiteRow, { type: 'access', ...q })).lines.map((l) => Number(l.split(' ')[1]))
    expect(await read({ lines: 1000 })).toEqual(Array.from({ length: 110 }, (_, i) => 50 + i))
    expect(await read({ search: 'a 6' })).toEqual([60, 61, 62, 63, 64, 65, 66, 67, 68, 69])
  })
})
