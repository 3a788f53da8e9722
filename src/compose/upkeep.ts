/** The background upkeep the server runs over the built services: maintenance, and the engine's events. */
import { HEALTH_INTERVAL_MS, type NodeHealth } from '../domain/cluster'
import { CRASH_WATCH_INTERVAL_MS } from '../domain/apps'
import type { StatusInfo } from '../domain/status'
import type { WebhooksService } from '../domain/webhooks'
import type { Agents } from './agents'
import type { Core } from './core'
import type { Modules } from './modules'
import type { Money, Payments } from './money'
import type { Names } from './names'
import type { Offsite } from './offsite'
import type { Sites } from './sites'

/** A payment still pending after this long belongs to no request in flight. */
const ORPHANED_PAYMENT_MS = 15 * 60_000

/** What `followContainerEvents` reads. */
export type ContainerEventDeps = Pick<Core, 'runtime' | 'log'> & Pick<Sites, 'healer' | 'reconciler' | 'databaseLife' | 'appCrashes'> & { status: Pick<StatusInfo, 'engine'>; apps: Pick<Sites['apps'], 'starts' | 'pushes' | 'php'> }

/**
 * Follows the engine's events for this instance's containers: a site's container that dies or is
 * removed is brought back at once (SiteHealer); when the event stream was lost (the engine
 * restarted), a reconcile pass compares everything. Whether the engine answers goes to the
 * platform status. Returns the stop function.
 */
export function followContainerEvents(s: ContainerEventDeps): () => void {
  const watch = s.runtime.watch({
    onEvent: (e) => {
      s.healer.onEvent(e)
      // An app's container that started gets its settings (they live in its /tmp only), and its pushes are followed.
      s.apps.starts.onEvent(e)
      s.apps.php.onEvent(e)
      if (e.action === 'start') s.apps.pushes.started(e.siteId)
    },
    // A database's container that died or was removed is brought back on its data (its state `recovering` meanwhile).
    onDatabaseEvent: (e) => s.databaseLife.onEvent(e),
    onReconnect: () => {
      void s.reconciler.reconcile().catch((err) => s.log.error('reconcile failed', { error: (err as Error).message }))
      void s.apps.starts.sweep().catch((err) => s.log.error('could not hand app sites their settings', { error: (err as Error).message }))
      void s.apps.php.sweep().catch((err) => s.log.error('could not hand PHP its sites\' settings', { error: (err as Error).message }))
    },
    onReachable: (reachable) => s.status.engine.set(reachable),
  })
  // At start: the app sites whose containers started while Berth was away get their settings;
  // every app site with SSH has its pushes followed (and again at each maintenance pass).
  void s.apps.starts.sweep().catch((err) => s.log.error('could not hand app sites their settings', { error: (err as Error).message }))
  void s.apps.php.sweep().catch((err) => s.log.error('could not hand PHP its sites\' settings', { error: (err as Error).message }))
  s.apps.pushes.keep()
  const keepPushes = setInterval(() => s.apps.pushes.keep(), 30_000)
  // An app's process entering its crash loop, or out of it: app.crashing / app.recovered (issue 41).
  const watchCrashes = setInterval(() => void s.appCrashes.tick(), CRASH_WATCH_INTERVAL_MS)
  return () => {
    clearInterval(keepPushes)
    clearInterval(watchCrashes)
    s.apps.pushes.stop()
    s.healer.stop()
    watch.close()
  }
}

/**
 * In a cluster, the nodes' health (domain/cluster/health.ts): a round every HEALTH_INTERVAL_MS
 * (2 s), the first at once. Returns the stop function.
 */
export function followNodeHealth(health: Pick<NodeHealth, 'tick'>, intervalMs = HEALTH_INTERVAL_MS): () => void {
  void health.tick()
  const timer = setInterval(() => void health.tick(), intervalMs)
  return () => clearInterval(timer)
}

/** What `runMaintenance` reads. */
export type MaintenanceDeps = Pick<Core, 'keys' | 'clock'> & { events: Pick<Core['events'], 'prune'>; webhooks: Pick<WebhooksService, 'prune'> } & Pick<Agents, 'limiter'> & Pick<Money, 'checkout' | 'subscriptions'> & Pick<Payments, 'charges'>
  & Pick<Sites, 'siteMetrics' | 'archives' | 'audit'> & Pick<Names, 'renewals'> & Pick<Modules, 'chatbot' | 'modules'> & { offsite: Pick<Offsite, 'copier'> | null }

/**
 * Periodic upkeep (every 30 s and on stop): flush key last-used times, prune rate-limit hits,
 * expire unpaid checkouts, store the edge's traffic counts; queue due site backups and finish
 * archive removals (in the background: `maintain` never throws); a pass of the copies off the box;
 * the audit trail's retention (hourly); the events older than 30 days, and the webhooks' finished deliveries as old.
 */
export function runMaintenance(s: MaintenanceDeps): void {
  s.keys.flushLastUsed()
  s.limiter.prune()
  s.checkout.expireOld()
  s.siteMetrics.persist()
  s.audit.prune()
  s.events.prune(s.clock.now())
  s.webhooks.prune(s.clock.now())
  void s.archives.maintain()
  void s.renewals.renewDue()
  void s.subscriptions.runDue()
  // A payment pending this long is no request's any more (a processor that was unreachable).
  void s.charges.resumePending(s.clock.now() - ORPHANED_PAYMENT_MS)
  void s.chatbot.maintain(s.modules.sitesWith('chatbot').map((site) => ({ siteId: site.id, slug: site.slug })))
  // Copies off the box: due puts and deletions, the store copy every interval, the daily drill.
  s.offsite?.copier.kick()
}
