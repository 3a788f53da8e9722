import { describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../config/config'
import { NodesRepository } from '../domain/cluster/repository'
import { selectFirewall } from '../drivers/firewall/select'
import { migrate } from '../store/migrate'
import { openStore } from '../store/store'
import { firewallPolicyOnThisBox } from './firewall'

/**
 * `berth firewall check` and `apply` on a cluster's control plane use the policy berth serve
 * keeps, its nodes with it (issue 36, item 3): before, they computed it without the nodes, so
 * check said the rules had drifted and apply took the nodes' rules away until berth serve's next pass.
 */
const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-fw-cli-'))
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) }
}

const configOf = (dir: string, cluster: boolean) => loadConfig({
  file: null,
  env: { BERTH_SERVER_DATA_DIR: dir, BERTH_CONTAINERS_FIREWALL: 'true', ...(cluster ? { BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: '10.0.0.1' } : {}) },
})

function node(repo: NodesRepository, id: string, address: string, agentPort: number) {
  repo.insert({ id, name: id, address, agentPort, certFingerprint: id.padEnd(64, '0'), certSerial: id, state: 'active', memoryBytes: 1 << 30, cpus: 1, joinedAt: 1 })
}

describe('berth firewall on a cluster\'s control plane', () => {
  it('computes the policy berth serve keeps: every node not removed blocked, each one\'s agent ports closed', () => {
    using d = dataDir()
    const config = configOf(d.dir, true)
    const store = openStore(join(d.dir, 'berth.db'))
    migrate(store)
    const repo = new NodesRepository(store)
    node(repo, 'node_b', '10.0.0.2', 7810)
    node(repo, 'node_c', '10.0.0.3', 7710)
    node(repo, 'node_gone', '10.0.0.9', 9000)
    repo.setState('node_gone', ['active'], 'removed', 2)
    const kept = selectFirewall(config, () => repo.list({ live: true }))!.policy
    store.close()
    const policy = firewallPolicyOnThisBox(config)
    expect(policy).toEqual(kept)
    expect(policy).toMatchObject({ blockedHosts: ['10.0.0.2', '10.0.0.3'], closedPorts: { tcp: [2377, 7710, 7711, 7810, 7811, 7946] } })
  })

  it('has no nodes before berth serve made the store, and none on a single box', () => {
    using d = dataDir()
    expect(firewallPolicyOnThisBox(configOf(d.dir, true))).toMatchObject({ blockedHosts: [], closedPorts: { tcp: [2377, 7710, 7711, 7946] } })
    expect(firewallPolicyOnThisBox(configOf(d.dir, false))).not.toHaveProperty('blockedHosts')
  })

  it('says to migrate when the store is not migrated to this berth, rather than dropping the nodes\' rules', () => {
    using d = dataDir()
    openStore(join(d.dir, 'berth.db')).close()
    expect(firewallPolicyOnThisBox(configOf(d.dir, true))).toMatch(/is not migrated to this berth .*run berth migrate/)
  })
})
