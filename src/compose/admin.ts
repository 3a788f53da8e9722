/**
 * The admin API's facades (admin/facades.ts) over the composition: `berth serve` builds them
 * once and hands them to its admin socket (admin/listener.ts). A read-only admin command with no
 * server running builds the same over its own composition, nothing started (buildApp's `admin` role, compose/app.ts),
 * while it holds the data folder's lock.
 */
import type { AdminFacades, JoinTokenView } from '../admin/facades'
import type { Config } from '../config/config'
import { AccountAdmin } from '../domain/accounts'
import { issueJoinToken } from '../domain/cluster'
import { SiteAdmin } from '../domain/sites'
import { readJoinTls } from '../drivers/cluster/pki'
import { acceptsConnection } from '../drivers/runtime/first-answer'
import { SWARM_GOSSIP_PORT } from '../drivers/runtime/swarm-membership'
import type { ClusterNode } from '../drivers/cluster/types'
import type { Logger } from '../lib/logger'
import { offsiteStatusIn, type OffsiteStatus } from '../domain/offsite'
import { readSetting } from '../store/settings'
import type { Store } from '../store/store'
import { SIGNING_KEY_SETTING, signingKeyOf } from './offsite'
import { AdminUnsupportedError } from '../admin/routes'
import { agentAnswers, buildNodeOps, type NodeOps, type NodeOpsDeps } from './cluster-ops'
import type { SiteLifecycle, SiteReaper, SitesService } from '../domain/sites'
import type { NodeLink, Placement } from '../drivers/cluster/types'
import type { SharedRepositories } from './core'
import type { Offsite } from './offsite'

/**
 * What the admin facades read of the areas (compose/app.ts adminSourcesOf names each): the node
 * operations' deps, and the sites' views, lifecycle and reaper, the placement and the link to the
 * nodes, and the copies off the box.
 */
export interface AdminSources extends NodeOpsDeps {
  repos: NodeOpsDeps['repos'] & Pick<SharedRepositories, 'billing' | 'keys' | 'accounts'>
  sites: SitesService
  lifecycle: SiteLifecycle
  reaper: SiteReaper
  placement: Placement | null
  /** With cluster.enabled: the link to the nodes' agents. */
  cluster: { link: NodeLink } | null
  offsite: Offsite | null
}

/** The sites' and accounts' admin services over the areas (berth serve's, or a test's in-process ones). */
export function adminOver(s: AdminSources, log: Logger): Pick<AdminFacades, 'sites' | 'accounts'> {
  // The composition's repositories, made once (the sites' with its SSH-port policy).
  const { store, clock, runner, repos: { sites, billing, keys, accounts } } = s
  return {
    sites: new SiteAdmin({ store, clock, log, sites, views: s.sites, accounts, billing, lifecycle: s.lifecycle, reaper: s.reaper, runner }),
    accounts: new AccountAdmin({ store, clock, log, accounts, keys, sites, billing, runner }),
  }
}

/** Every facade of the admin API over the areas: what `berth serve` hands its admin socket. */
export function adminFacadesOf(s: AdminSources, log: Logger): AdminFacades {
  return {
    ...adminOver(s, log),
    plans: s.plans,
    nodes: nodeFacadeOf(s),
    offsiteStatus: () => offsiteStatusOf(s.config, s.store, s.clock.now()),
    offsite: s.offsite && {
      push: async (onStep) => {
        const destination = s.offsite!.destination.describe
        return { destination, ...(await s.offsite!.copier.push(onStep)) }
      },
    },
  }
}

function nodeFacadeOf(s: AdminSources): AdminFacades['nodes'] {
  const placement = s.placement
  if (!s.config.cluster.enabled || !placement || !s.cluster) return null
  // The box still takes connections on the Swarm's gossip port: its engine runs (and its sites may
  // serve) though its agent is silent. Asked directly: the manager's view of a powered-off node
  // stays `ready` for several seconds after berth serve has marked it down.
  const engineUp = (node: ClusterNode) => acceptsConnection({ address: node.address, port: SWARM_GOSSIP_PORT }, 2_000)
  const ops = buildNodeOps(s, placement, agentAnswers(s.cluster.link), { engineUp })
  return { service: ops.nodes, mover: ops.mover, token: () => joinToken(s.config, ops.repo, s) }
}

function joinToken(config: Config, repo: NodeOps['repo'], s: Pick<AdminSources, 'clock'>): JoinTokenView {
  const joinTls = readJoinTls(config.server.dataDir)
  if (!joinTls) throw new AdminUnsupportedError('no_cluster', `${config.server.dataDir}/cluster/join.pem does not exist: berth serve makes it at its start with cluster.enabled = true`)
  const { token, expiresAt } = issueJoinToken(repo, s.clock, config.cluster.joinTokenMinutes)
  const host = config.cluster.address.includes(':') ? `[${config.cluster.address}]` : config.cluster.address
  const url = `https://${host}:${config.cluster.joinPort}`
  const fingerprint = `sha256:${joinTls.fingerprint}`
  return { token, expires_at: new Date(expiresAt).toISOString(), url, fingerprint, command: `berth node join ${url} --token ${token} --fingerprint ${fingerprint} --address NODE_ADDRESS` }
}

/**
 * What berth offsite status shows, read from `store`: the signing key's public half is made on
 * first use while offsite.url is set (a write: berth serve's, or the command's under the lock).
 */
export function offsiteStatusOf(config: Config, store: Store, now: number): OffsiteStatus {
  return offsiteStatusIn(store, {
    now,
    destination: config.offsite.url || null,
    intervalSeconds: config.offsite.storeIntervalSeconds,
    signingKey: config.offsite.url || readSetting(store, SIGNING_KEY_SETTING) ? signingKeyOf(store).publicKey() : null,
  })
}
