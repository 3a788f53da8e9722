import { eq } from 'drizzle-orm'
import type { LocalLedger } from '../../drivers/payments/local'
import type { ChargeInput, ChargeResult } from '../../drivers/payments/types'
import type { Clock } from '../../lib/clock'
import { localCharges } from '../../store/schema'
import type { Store } from '../../store/store'

/** The built-in processor's ledger in the store: what it answered for each idempotency key. */
export class LocalLedgerStore implements LocalLedger {
  constructor(private store: Store, private clock: Clock) {}

  find(idempotencyKey: string): ChargeResult | null {
    const row = this.store.db.select().from(localCharges).where(eq(localCharges.idempotencyKey, idempotencyKey)).get()
    return row ? (JSON.parse(row.result) as ChargeResult) : null
  }

  record(idempotencyKey: string, input: ChargeInput, result: ChargeResult): void {
    this.store.write(() => {
      this.store.db.insert(localCharges).values({
        idempotencyKey, paymentRef: result.ok ? result.paymentRef : '', amountCents: input.amountCents, paymentMethodId: input.paymentMethodId,
        result: JSON.stringify(result), createdAt: this.clock.now(),
      }).onConflictDoNothing().run()
    })
  }
}
