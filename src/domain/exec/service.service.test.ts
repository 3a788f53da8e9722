import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSiteHome } from '../../drivers/files/home'
import { DockerRuntime } from '../../drivers/runtime/docker'
import { IMAGES } from '../../drivers/runtime/images'
import { LABEL } from '../../drivers/runtime/site-container'
import { SiteNotRunnableError } from '../../drivers/runtime/types'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { AuditEnd, AuditStart, AuditTrail } from '../audit/trail'
import { DomainError, OverBudgetError } from '../errors'
import { ExecService } from './service'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// The exec service over the real engine and the real home on the host: what it records in the
// audit trail, how it ends when the site is not running, and its limit of two at once.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log: memoryLogger() })
const site = { id: 'id-exec-svc', slug: 'exec-svc' } as SiteRow
const actor = { kind: 'key', keyId: 'key-1', keyPrefix: 'svc_0123abcd' } as const

/** An audit trail that keeps what it is told. */
function recordingTrail() {
  const records: { start: AuditStart; end: AuditEnd[] }[] = []
  const trail: AuditTrail = {
    begin(start) {
      const record = { start, end: [] as AuditEnd[] }
      records.push(record)
      return { end: (outcome) => record.end.push(outcome) }
    },
  }
  return { trail, records }
}

beforeAll(async () => {
  await runtime.ensureSite({ siteId: site.id, slug: site.slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
}, 120_000)
afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 120_000)

describe('ExecService', () => {
  it('records each exec in the audit trail: its command line and key, then its exit code or its timeout', async () => {
    const { trail, records } = recordingTrail()
    const exec = new ExecService(runtime, openSiteHome, trail)
    expect(await exec.run(site, actor, { command: ['sh', '-c', "echo 'it''s'; exit 4"] })).toMatchObject({ exit_code: 4, stdout: "its\n" })
    expect(await exec.run(site, actor, { command: 'sleep 30', timeout_seconds: 1 })).toMatchObject({ exit_code: 137, timed_out: true })
    expect(records).toEqual([
      { start: { siteId: site.id, kind: 'exec', actor, command: "sh -c 'echo '\\''it'\\'''\\''s'\\''; exit 4'" }, end: [{ exitCode: 4 }] },
      { start: { siteId: site.id, kind: 'exec', actor, command: 'sleep 30' }, end: [{ exitCode: 137, reason: 'timed out' }] },
    ])
  })

  it('runs two at once per site; a third is over budget with a Retry-After of at most 5 s, and nothing of it is recorded', async () => {
    const { trail, records } = recordingTrail()
    const exec = new ExecService(runtime, openSiteHome, trail)
    const running = [exec.run(site, actor, { command: 'sleep 1; echo a' }), exec.run(site, actor, { command: 'sleep 1; echo b' })]
    await Bun.sleep(300)
    const third = await exec.run(site, actor, { command: ['true'] }).catch((err: unknown) => err)
    expect(third).toBeInstanceOf(OverBudgetError)
    expect((third as OverBudgetError).retryAfterSeconds).toBeGreaterThanOrEqual(1)
    expect((third as OverBudgetError).retryAfterSeconds).toBeLessThanOrEqual(5)
    expect((await Promise.all(running)).map((r) => r.stdout)).toEqual(['a\n', 'b\n'])
    expect(records).toHaveLength(2)
    // The slots are free again.
    expect((await exec.run(site, actor, { command: ['true'] })).exit_code).toBe(0)
  })

  it('refuses what cannot run as invalid before recording anything', async () => {
    const { trail, records } = recordingTrail()
    const exec = new ExecService(runtime, openSiteHome, trail)
    const refused = async (input: Parameters<ExecService['run']>[2]) => {
      const err = await exec.run(site, actor, input).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(DomainError)
      return [(err as DomainError).kind, (err as DomainError).field]
    }
    expect(await refused({ command: ['echo', 'a\0b'] })).toEqual(['invalid', 'command'])
    expect(await refused({ command: ['true'], env: { A: 'x\0' } })).toEqual(['invalid', 'env'])
    expect(await refused({ command: ['true'], env: { '1A': 'x' } })).toEqual(['invalid', 'env'])
    expect(await refused({ command: ['true'], env: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x'])) })).toEqual(['invalid', 'env'])
    expect(await refused({ command: ['true'], stdin: 'é'.repeat(600_000) })).toEqual(['too_large', 'stdin'])
    expect(await refused({ command: ['true'], cwd: 'public/index.html' })).toEqual(['invalid', 'cwd'])
    expect(await refused({ command: ['\ud800'] })).toEqual(['invalid', 'command'])
    expect(records).toEqual([])
  })

  it('records an exec that could not start when the site is not running, and throws SiteNotRunnableError (409)', async () => {
    const { trail, records } = recordingTrail()
    const exec = new ExecService(runtime, openSiteHome, trail)
    await runtime.stopSite(site.slug)
    try {
      await expect(exec.run(site, actor, { command: ['true'] })).rejects.toBeInstanceOf(SiteNotRunnableError)
      expect(records.map((r) => r.end)).toEqual([[{ exitCode: null, reason: 'site not running' }]])
    } finally {
      await runtime.ensureSite({ siteId: site.id, slug: site.slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
    }
  }, 60_000)
})
