import { spawnSync } from 'bun'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { IptablesFirewall } from './iptables'
import { firewallPolicyOf } from './select'
import { loadConfig } from '../../config/config'

/**
 * IptablesFirewall on the real iptables, in a network namespace of this test's own (its own
 * filter table: nothing of the host's is touched), with a DOCKER-USER chain as the engine makes.
 * The restore command is iptables-restore followed by what an engine does when anyone makes a
 * network at that moment: its rules go on top of FORWARD, above Berth's backstop.
 */
const NS = `berthfwe-${Math.random().toString(36).slice(2, 6)}`
let dir: string

function sh(...argv: string[]): string {
  const p = spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`${argv.join(' ')}: ${p.stderr.toString()}`)
  return p.stdout.toString()
}

beforeAll(() => {
  sh('ip', 'netns', 'add', NS)
  sh('ip', 'netns', 'exec', NS, 'iptables', '-N', 'DOCKER-USER')
  sh('ip', 'netns', 'exec', NS, 'iptables', '-A', 'FORWARD', '-j', 'DOCKER-USER')
  dir = mkdtempSync(join(tmpdir(), 'berth-fw-ensure-'))
  const script = (name: string, body: string) => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`)
    chmodSync(join(dir, name), 0o755)
    return join(dir, name)
  }
  script('iptables', `exec ip netns exec ${NS} iptables "$@"`)
  script('restore', `exec ip netns exec ${NS} iptables-restore "$@"`)
  script('restore-then-network', `ip netns exec ${NS} iptables-restore "$@" || exit $?\nexec ip netns exec ${NS} iptables -I FORWARD 1 -o br-test -j ACCEPT`)
})

afterAll(() => {
  spawnSync(['ip', 'netns', 'del', NS])
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('IptablesFirewall.ensure on a busy engine', () => {
  it('puts the rules in place, and does not fail when a network made meanwhile moved the FORWARD backstop down', async () => {
    const policy = firewallPolicyOf(loadConfig({ file: null, env: {} }))
    const firewall = new IptablesFirewall(policy, { iptables: join(dir, 'iptables'), restore: join(dir, 'restore-then-network') })
    expect((await firewall.ensure()).state).toBe('missing')
    // Every rule took, the SMTP one among them; only the backstop sits below the network's rule.
    const listing = sh(join(dir, 'iptables'), '-S')
    expect(listing).toMatch(/--dports 25 .*-j REJECT --reject-with tcp-reset/)
    expect(await firewall.check()).toMatchObject({ state: 'drifted', problems: ['the jump from FORWARD is not first'] })
    // The next pass (without a network meanwhile) puts the backstop back on top.
    const next = new IptablesFirewall(policy, { iptables: join(dir, 'iptables'), restore: join(dir, 'restore') })
    expect((await next.ensure()).problems).toEqual(['the jump from FORWARD is not first'])
    expect((await next.check()).state).toBe('in_place')
  })
})
