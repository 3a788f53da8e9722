import { and, eq, sql } from 'drizzle-orm'
import { AiProviderError, type AiProvider, type ChatInput, type ChatResult } from '../drivers/ai/types'
import type { Clock } from '../lib/clock'
import { aiUsage } from '../store/schema'
import type { Store } from '../store/store'
import { OverBudgetError, upstreamFailed, upstreamTimeout } from '../domain/errors'

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7)
const nextMonthStart = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/**
 * Each site's monthly allowance of model tokens (config `ai.tokens_per_site_monthly`, for plans
 * that include an AI module), counted in the store per UTC calendar month from what the provider
 * reports it used. A call is refused once the month's tokens are spent; the count resets on the 1st.
 */
export class AiBudget {
  constructor(private store: Store, private clock: Clock, readonly monthlyTokens: number) {}

  used(siteId: string): number {
    const row = this.store.db.select().from(aiUsage).where(and(eq(aiUsage.siteId, siteId), eq(aiUsage.month, monthOf(this.clock.now())))).get()
    return row?.tokens ?? 0
  }

  /** Throws OverBudgetError (429 with Retry-After until the 1st) when the month's tokens are spent. */
  check(siteId: string): void {
    const used = this.used(siteId)
    if (used < this.monthlyTokens) return
    const now = this.clock.now()
    const reset = nextMonthStart(now)
    throw new OverBudgetError(`This site has used its ${this.monthlyTokens} AI tokens for ${monthOf(now)} (used: ${used}); the allowance renews on ${new Date(reset).toISOString().slice(0, 10)}.`, Math.ceil((reset - now) / 1000))
  }

  add(siteId: string, tokens: number): void {
    const month = monthOf(this.clock.now())
    this.store.write(() => {
      this.store.db.insert(aiUsage).values({ siteId, month, tokens, calls: 1 })
        .onConflictDoUpdate({ target: [aiUsage.siteId, aiUsage.month], set: { tokens: sql`${aiUsage.tokens} + ${tokens}`, calls: sql`${aiUsage.calls} + 1` } }).run()
    })
  }
}

/**
 * One chat completion for a site's module: refused when the site's tokens are spent, counted
 * when it ran, and the provider's failures turned into the domain's (504 on a timeout, 502 for
 * the rest, with the provider's own explanation).
 */
export async function askModel(provider: AiProvider, budget: AiBudget, siteId: string, input: ChatInput): Promise<ChatResult> {
  budget.check(siteId)
  try {
    const result = await provider.chat(input)
    budget.add(siteId, result.usage.totalTokens)
    return result
  } catch (err) {
    if (err instanceof AiProviderError) throw err.kind === 'timeout' ? upstreamTimeout(err.message) : upstreamFailed(err.message)
    throw err
  }
}

/** A model's answer without the Markdown code fence some models wrap a document in. */
export function withoutFence(text: string): string {
  const m = /^\s*```(?:html)?\s*\n([\s\S]*?)\n```\s*$/.exec(text)
  return (m ? m[1]! : text).trim()
}
