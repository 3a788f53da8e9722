import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importArrows } from '../../../test/helpers/import-arrows'

const ROOT = join(import.meta.dirname, '../../..')

/**
 * Billing and sites imported each other (billing/subscriptions.ts suspended, reactivated and
 * scheduled sites itself; sites/lifecycle.ts charges plan changes through billing). Billing now
 * publishes subscription events (events.ts) that sites/subscription-sites.ts answers, so the
 * arrows run one way: sites read billing's facts, billing knows nothing of sites.
 */
describe('billing and sites', () => {
  it('billing imports nothing from sites, its tests included', () => {
    expect(importArrows(ROOT, 'src/domain/billing', 'src/domain/sites')).toEqual([])
  })
})
