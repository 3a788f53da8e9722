import { isIpAddress } from '../../lib/ip'
import { parseFirewallPolicy } from '../../drivers/firewall/policy'
import type { FirewallCheck, SiteFirewallPolicy } from '../../drivers/firewall/types'
import type { AgentInfo } from '../../drivers/cluster/types'
import type { Forwards } from './forwards'
import { homeHandlers, noHomes, type HomeFolders } from './home-agent'
import { agentError, type AgentHandlers } from './router'

/** The site firewall a node keeps, as the agent's API changes it (./firewall.ts keeps it). */
export interface NodeFirewall {
  /** The policy kept now; null when none. */
  policy(): SiteFirewallPolicy | null
  /** Keeps `policy` from now on (written to node.json, the rules replaced); the check from before. */
  set(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null>
  /** Checks the rules now and puts back what moved (never throws). */
  keep(): Promise<FirewallCheck | null>
}

/** What the agent's API answers from. */
export interface AgentApi {
  info(): Promise<AgentInfo>
  forwards: Forwards
  /** The site volumes' folders on this node; absent, the homes routes answer 501 (tests of the other routes). */
  homes?: HomeFolders
  /** Absent: the agent keeps no firewall it can be given (tests), and setFirewall answers 501. */
  firewall?: NodeFirewall
}

/** The handler of each route of the contract (contract/routes.ts) over `api`. */
export function agentHandlers(api: AgentApi): AgentHandlers {
  return {
    info: () => api.info(),
    setFirewall: async ({ body }) => {
      if (!api.firewall) return agentError(501, 'not_implemented', 'This agent keeps no site firewall.')
      const parsed = parseFirewallPolicy(body.policy)
      if ('error' in parsed) return agentError(422, 'validation_error', `${parsed.param} ${parsed.error}.`, parsed.param)
      const before = await api.firewall.set(parsed.policy)
      return { state: before?.state ?? null }
    },
    openForward: async ({ params, body }) => {
      if (!isIpAddress(body.address)) return agentError(422, 'validation_error', 'address must be the container\'s IP address.', 'address')
      const port = await api.forwards.open(params.slug, { address: body.address, port: body.port })
      // A forward follows a site's new container, whose network the engine may just have made (its
      // rules on top of FORWARD): the firewall's backstop goes back above them.
      void api.firewall?.keep()
      return { port }
    },
    closeForward: async ({ params }) => {
      await api.forwards.close(params.slug)
    },
    ...(api.homes ? homeHandlers(api.homes) : noHomes()),
  }
}
