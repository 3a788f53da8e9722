import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { DomainError } from '../errors'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans/service'
import { openSiteHome } from '../../drivers/files/home'
import { LogsService } from './service'

/**
 * The logs service on real homes full of what a tenant can plant in ~/logs (symlinks, a FIFO, a
 * socket, a device node, folders); only the site and plan lookups and the volume's path are
 * stand-ins (test/site-operations.e2e.test.ts reads logs of real sites).
 */
let root: string
const homes = new Map<string, string>()
let socket: ReturnType<typeof Bun.listen> | undefined

function home(slug: string, build: (logs: string, home: string) => void): void {
  const dir = join(root, slug)
  mkdirSync(dir)
  build(join(dir, 'logs'), dir)
  homes.set(slug, dir)
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-logs-'))
  writeFileSync(join(root, 'host-secret'), 'root:x:0:0\n')
  home('plain', (logs) => {
    mkdirSync(logs)
    writeFileSync(join(logs, 'error.log'), 'one\ntwo\nthree\n')
  })
  home('no-logs-folder', () => {})
  home('empty-logs-folder', (logs) => mkdirSync(logs))
  home('log-symlink-out', (logs) => {
    mkdirSync(logs)
    symlinkSync(join(root, 'host-secret'), join(logs, 'error.log'))
  })
  home('log-symlink-in', (logs) => {
    mkdirSync(logs)
    writeFileSync(join(logs, 'access.log'), 'inside\n')
    symlinkSync('access.log', join(logs, 'error.log'))
  })
  home('logs-folder-symlink', (logs) => symlinkSync(root, logs))
  home('logs-is-a-file', (logs) => writeFileSync(logs, 'x'))
  home('log-is-a-folder', (logs) => mkdirSync(join(logs, 'error.log'), { recursive: true }))
  home('log-is-a-fifo', (logs) => {
    mkdirSync(logs)
    execFileSync('mkfifo', [join(logs, 'error.log')])
  })
  home('log-is-a-socket', (logs) => {
    mkdirSync(logs)
    socket = Bun.listen({ unix: join(logs, 'error.log'), socket: { data() {} } })
  })
  home('log-is-a-device', (logs) => {
    mkdirSync(logs)
    execFileSync('mknod', [join(logs, 'error.log'), 'c', '1', '3'])
  })
})
afterAll(() => {
  socket?.stop(true)
  rmSync(root, { recursive: true, force: true })
})

const plans = { get: () => ({ hosting_type: 'vps' }) } as unknown as PlansService
const runtime = { homePath: async (slug: string) => homes.get(slug)! } as unknown as ContainerRuntime
const logs = new LogsService(plans, runtime, openSiteHome)

/** The lines read, or `<status> <param>` of the refusal. */
async function outcome(slug: string): Promise<string[] | string> {
  try {
    return (await logs.read({ slug, planSlug: 'business' } as SiteRow, { type: 'error' })).lines
  } catch (err) {
    if (!(err instanceof DomainError)) throw err
    expect(err.message).not.toContain(root)
    return `${err.kind} ${err.field}`
  }
}

describe('LogsService.read', () => {
  it.each([
    ['a regular log', 'plain', ['one', 'two', 'three']],
    ['no logs folder yet', 'no-logs-folder', []],
    ['no log yet', 'empty-logs-folder', []],
    ['a log that is a symlink to a host file', 'log-symlink-out', 'conflict type'],
    ['a log that is a symlink inside the home', 'log-symlink-in', 'conflict type'],
    ['a logs folder that is a symlink to a host folder', 'logs-folder-symlink', 'conflict type'],
    ['a logs "folder" that is a file', 'logs-is-a-file', 'conflict type'],
    ['a log that is a folder', 'log-is-a-folder', 'conflict type'],
    ['a log that is a FIFO (never opened, so never blocks)', 'log-is-a-fifo', 'conflict type'],
    ['a log that is a unix socket', 'log-is-a-socket', 'conflict type'],
    ['a log that is a device node', 'log-is-a-device', 'conflict type'],
  ])('%s (home %s)', async (_, slug, expected) => {
    expect(await outcome(slug)).toEqual(expected)
  })
})
