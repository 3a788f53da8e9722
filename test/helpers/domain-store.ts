import { onTestFinished } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_PLANS } from '../../src/config/defaults'
import { LocalLedgerStore } from '../../src/domain/billing/local-ledger-repository'
import { AccountsRepository } from '../../src/domain/accounts/repository'
import { PlansRepository } from '../../src/domain/plans/repository'
import { PlansService } from '../../src/domain/plans/service'
import { LocalProcessor } from '../../src/drivers/payments/local'
import { ProcessorUnavailableError, type ChargeInput } from '../../src/drivers/payments/types'
import { ManualClock } from '../../src/lib/clock'
import { memoryLogger } from '../../src/lib/logger'
import { migrate } from '../../src/store/migrate'
import { openStore } from '../../src/store/store'
import { placeMigratedDatabase } from './migrated-db'

/**
 * What a domain service's unit test stands on: a real SQLite store in a temporary folder with
 * the migrations applied and the default plan catalog seeded, a manual clock and an in-memory
 * log. Services are then built by the test from their repositories and small doubles, so a test
 * exercises one service through its public methods. Called inside a test, the store is removed
 * when the test finishes (`close` does it earlier).
 */
export function domainStore() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-unit-'))
  placeMigratedDatabase(join(dir, 'berth.db'))
  const store = openStore(join(dir, 'berth.db'))
  migrate(store)
  const clock = new ManualClock(Date.UTC(2026, 10, 1))
  const log = memoryLogger()
  const plansRepo = new PlansRepository(store, clock)
  plansRepo.seedOnce(DEFAULT_PLANS)
  const plans = new PlansService(plansRepo, store, 'berth')
  const accounts = new AccountsRepository(store)
  /** A new account, with a payment method on file unless `method` is null. */
  function account(method: string | null = 'pm_card_visa', email = 'ada@example.com'): string {
    const id = accounts.insert({ id: crypto.randomUUID(), email, name: 'Agent Key', createdAt: clock.now() }).id
    if (method) accounts.setPaymentMethod(id, method, `${method} (test)`, clock.now())
    return id
  }
  /** True when the log has a line with this message. */
  const logged = (msg: string) => log.lines.some((l) => l.msg === msg)
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    store.close()
    rmSync(dir, { recursive: true, force: true })
  }
  onTestFinished(close)
  return { dir, store, clock, log, plans, accounts, account, logged, close }
}

export type DomainStore = ReturnType<typeof domainStore>

/**
 * The built-in test-mode processor with its ledger in `t.store` (pm_card_visa pays,
 * pm_card_visa_chargeDeclined declines), recording each charge and refund it is asked for;
 * `setReachable(false)` makes it throw ProcessorUnavailableError as a processor that cannot be
 * reached does.
 */
export function testProcessor(t: DomainStore) {
  const local = new LocalProcessor({
    siteUrl: 'http://localhost:8080', lookup: () => null, ledger: new LocalLedgerStore(t.store, t.clock),
    portal: { url: () => ({ url: '', expiresAt: 0 }) }, now: () => t.clock.now(),
  })
  const charged: ChargeInput[] = []
  const refunded: string[] = []
  const hosted: string[] = []
  let reachable = true
  const unreachable = () => new ProcessorUnavailableError('connection refused')
  const processor = Object.assign(Object.create(local) as LocalProcessor, {
    async charge(input: ChargeInput) {
      if (!reachable) throw unreachable()
      charged.push(input)
      return local.charge(input)
    },
    async refund(input: { paymentRef: string; amountCents: number; reason: string }) {
      if (!reachable) throw unreachable()
      refunded.push(input.paymentRef)
      return local.refund(input)
    },
    async createHostedCheckout(input: Parameters<LocalProcessor['createHostedCheckout']>[0]) {
      if (!reachable) throw unreachable()
      hosted.push(input.reference)
      return local.createHostedCheckout(input)
    },
  })
  return { processor, charged, refunded, hosted, setReachable: (v: boolean) => void (reachable = v) }
}
