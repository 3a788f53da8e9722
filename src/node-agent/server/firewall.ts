import type { NodeFiles, NodeIdentity } from '../../drivers/cluster/node-files'
import { IptablesFirewall } from '../../drivers/firewall/iptables'
import { SiteFirewallKeeper } from '../../drivers/firewall/keeper'
import type { FirewallCheck, SiteFirewallPolicy } from '../../drivers/firewall/types'
import type { Logger } from '../../lib/logger'
import type { NodeFirewall } from './api'

/**
 * The site firewall this node keeps (node.json's `firewall`), with the single box's keeper: at
 * start, then every FIREWALL_CHECK_MS. Sites on the node are kept off its own addresses (the
 * agent, the engine pass-through, sshd), link-local ones, the control plane's but its edge ports,
 * and the cluster's ports anywhere. The join gives the first policy; the control plane sends a
 * new one when its own changed (the setFirewall route), which is written to node.json and replaces
 * the rules (those of another pool removed). Null (the control plane's containers.firewall =
 * false) stops the keeping and leaves the rules, as on the single box.
 */
export class KeptNodeFirewall implements NodeFirewall {
  private keeper: SiteFirewallKeeper
  private kept: IptablesFirewall | null
  private changing: Promise<unknown> = Promise.resolve()

  constructor(private files: NodeFiles, private identity: NodeIdentity, private log: Logger) {
    if (identity.firewall === undefined) {
      log.warn('node.json has no site firewall policy (this node joined before nodes were given one): sites here can reach this box\'s own addresses until the control plane sends one')
    }
    this.kept = identity.firewall ? new IptablesFirewall(identity.firewall) : null
    this.keeper = new SiteFirewallKeeper({ firewall: this.kept, log })
  }

  policy(): SiteFirewallPolicy | null {
    return this.identity.firewall ?? null
  }

  keep(): Promise<FirewallCheck | null> {
    return this.serially(() => this.keeper.keep())
  }

  /** Two control plane calls in a row end with the second policy. */
  set(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null> {
    return this.serially(() => this.replace(policy))
  }

  /** One pass or change at a time: two at once would both replace the same rules. */
  private serially(work: () => Promise<FirewallCheck | null>): Promise<FirewallCheck | null> {
    const next = this.changing.then(work)
    this.changing = next.catch(() => {})
    return next
  }

  private async replace(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null> {
    const old = this.kept
    this.identity = { ...this.identity, firewall: policy }
    this.files.writeIdentity(this.identity)
    this.kept = policy ? new IptablesFirewall(policy) : null
    this.keeper = new SiteFirewallKeeper({ firewall: this.kept, log: this.log })
    this.log.info('the control plane gave a new site firewall policy', { pool: policy?.pool ?? null })
    if (old && policy && old.policy.pool !== policy.pool) {
      await old.remove().catch((err) => this.log.warn('could not remove the site firewall of the former pool', { pool: old.policy.pool, error: (err as Error).message }))
    }
    return this.keeper.keep()
  }
}
