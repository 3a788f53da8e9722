/**
 * What the admin API acts on: the facades `berth serve` hands its admin socket (compose/admin.ts
 * builds them from its composition). Each is an area's own admin service; nothing else of the
 * composition is reachable through the socket.
 */
import type { AccountAdmin } from '../domain/accounts'
import type { NodesService, SiteMover } from '../domain/cluster'
import type { PlansService } from '../domain/plans'
import type { OffsiteStatus, OffsiteStep } from '../domain/offsite'
import type { SiteAdmin } from '../domain/sites'

/** A join token as `berth nodes token` prints it. */
export interface JoinTokenView {
  token: string
  expires_at: string
  url: string
  fingerprint: string
  command: string
}

/** What `berth offsite push` prints. */
export interface OffsitePushView {
  destination: string
  copied: number
  deleted: number
  manifest: string | null
  failures: { key: string; error: string }[]
}

export interface AdminFacades {
  sites: SiteAdmin
  accounts: AccountAdmin
  plans: Pick<PlansService, 'list' | 'add' | 'setDeprecated'>
  /** The node operations of a cluster's control plane; null on a single box (cluster.enabled false). */
  nodes: { service: NodesService; mover: SiteMover; token(): JoinTokenView } | null
  /** Copies off the box; null when offsite.url is empty. */
  offsite: { push(onStep?: (step: OffsiteStep) => void): Promise<OffsitePushView> } | null
  /** How the copies off the box stand (berth offsite status), whether or not they are on. */
  offsiteStatus(): OffsiteStatus
}
