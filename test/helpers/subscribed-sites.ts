import { SubscriptionEvents } from '../../src/domain/billing/events'
import { SitesRepository } from '../../src/domain/sites/repository'
import { SubscriptionSites } from '../../src/domain/sites/subscription-sites'
import type { DomainStore } from './domain-store'

export { APPLY_JOBS } from '../../src/domain/sites/apply'
export { DELETION_GRACE_MS } from '../../src/domain/sites/lifecycle'

/**
 * The sites under subscriptions, subscribed to billing's events as src/compose/money.ts wires them, with
 * the job queue and the runner as doubles that record what they are asked. Billing's tests check
 * what a renewal, a lapse or an end does to sites through it, as billing itself knows the sites
 * area only through those events.
 */
export function subscribedSites(t: DomainStore) {
  const sites = new SitesRepository(t.store)
  const stopped: string[] = []
  const enqueued: [string, string][] = []
  let kicks = 0
  const events = new SubscriptionEvents()
  const answers = new SubscriptionSites({
    sites, log: t.log,
    jobs: { enqueue: (kind: string, id: string) => void enqueued.push([kind, id]), kick: () => void kicks++ } as never,
    runner: { stop: async (slug: string) => void stopped.push(slug) },
  })
  events.subscribe((event) => answers.answer(event))
  return { sites, events, stopped, enqueued, kicks: () => kicks }
}
