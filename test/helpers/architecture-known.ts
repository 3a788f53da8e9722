/**
 * Violations of src/architecture-graph.test.ts's rules allowed for a while, with the work that
 * removes them; the test fails on an entry whose violation is gone, so a stale one cannot linger.
 */

/**
 * A file and the repositories of other areas it imports. compose/ builds the repositories: they go
 * when each area's index exports the factory of its services over the store (issue 37 part C step
 * (c), buildApp). cli/ opens the store beside `berth serve`: they go when those commands are clients
 * of its admin socket (issue 37 part A).
 */
export const AREA_KNOWN: Record<string, string> = {
  'compose/cluster-ops': 'cluster/repository archives/repository offsite/repository sites/repository',
  'compose/core': 'accounts/repository archives/repository billing/repository checkout/repository domains/repository keys/repository offsite/repository plans/repository sites/repository',
  'compose/offsite': 'offsite/repository',
  'compose/cluster': 'cluster/repository',
  'compose/sites': 'cluster/marked-moves-repository',
  'cli/firewall': 'cluster/repository',
  'cli/nodes-token': 'cluster/repository',
}

/** Circles among files and among areas: none left; keep it so. */
export const CYCLES_KNOWN: string[] = []
