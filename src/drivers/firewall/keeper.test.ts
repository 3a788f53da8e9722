import { describe, expect, it } from 'vitest'
import { FirewallError, type FirewallCheck, type SiteFirewall } from './types'
import { memoryLogger } from '../../lib/logger'
import { SiteFirewallKeeper } from './keeper'

/** A firewall whose next `ensure` answers what the test queued (a check, or an error to throw). */
function scripted(answers: (FirewallCheck['state'] | Error)[]): SiteFirewall & { ensured: number } {
  return {
    tool: 'iptables',
    policy: { pool: '10.231.0.0/16', publicEdge: null },
    ensured: 0,
    async check() {
      throw new Error('not used')
    },
    async ensure() {
      this.ensured++
      const next = answers.shift()!
      if (next instanceof Error) throw next
      return { state: next, problems: next === 'drifted' ? ['no jump from INPUT'] : [], tool: 'iptables' }
    },
    async remove() {
      return false
    },
  }
}

const messages = (log: ReturnType<typeof memoryLogger>) => log.lines.map((l) => `${l.level} ${l.msg}`)

describe('SiteFirewallKeeper', () => {
  it('says at start whether it installed the rules or found them, and warns whenever it had to put them back', async () => {
    const log = memoryLogger()
    const keeper = new SiteFirewallKeeper({ firewall: scripted(['missing', 'in_place', 'missing', 'drifted']), log })
    for (let i = 0; i < 4; i++) await keeper.keep()
    expect(messages(log)).toEqual(['info installed the site firewall', 'warn restored the site firewall', 'warn restored the site firewall'])
    expect(log.lines[2]).toMatchObject({ found: 'drifted', problems: ['no jump from INPUT'], pool: '10.231.0.0/16' })
  })

  it('never throws: a failure is a warning, repeated only when its reason changes, and recovery is said', async () => {
    const log = memoryLogger()
    const missing = new FirewallError('iptables is not installed')
    const keeper = new SiteFirewallKeeper({ firewall: scripted([missing, missing, new FirewallError('permission denied'), 'missing']), log })
    for (let i = 0; i < 4; i++) expect(await keeper.keep()).toEqual(i < 3 ? null : expect.objectContaining({ state: 'missing' }))
    expect(messages(log)).toEqual([
      expect.stringMatching(/^warn the site firewall could not be set: sites can reach the host's own addresses/),
      expect.stringMatching(/^warn the site firewall could not be set/),
      'info the site firewall works again',
      'warn restored the site firewall',
    ])
    expect(log.lines[0]).toMatchObject({ error: 'iptables is not installed' })
  })

  it('when off, warns once and touches nothing', async () => {
    const log = memoryLogger()
    const keeper = new SiteFirewallKeeper({ firewall: null, log })
    await keeper.keep()
    await keeper.keep()
    expect(messages(log)).toEqual([expect.stringMatching(/^warn the site firewall is off \(containers.firewall = false\)/)])
  })
})
