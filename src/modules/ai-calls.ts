import { and, eq, sql } from 'drizzle-orm'
import { AiProviderError, type AiProvider, type ChatInput, type ChatResult } from '../drivers/ai/types'
import type { Clock } from '../lib/clock'
import { aiUsage } from '../store/schema'
import type { Store } from '../store/store'
import { op, OverBudgetError, say, upstreamFailed, upstreamTimeout } from '../domain/errors'

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7)
const nextMonthStart = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/**
 * Each site's monthly allowance of model tokens, its plan's `ai_tokens_monthly`, counted in the
 * store per UTC calendar month from what the provider reports it used. A call is refused once the
 * month's tokens are spent (at once on a plan with 0); the count resets on the 1st.
 */
export class AiBudget {
  /** `limitOf` gives a site's allowance (its plan's), read on every call so a plan change counts at once. */
  constructor(private store: Store, private clock: Clock, readonly limitOf: (siteId: string) => number) {}

  used(siteId: string): number {
    const row = this.store.db.select().from(aiUsage).where(and(eq(aiUsage.siteId, siteId), eq(aiUsage.month, monthOf(this.clock.now())))).get()
    return row?.tokens ?? 0
  }

  /** Throws OverBudgetError (429 with Retry-After until the 1st) when the month's tokens are spent. */
  check(siteId: string): void {
    const limit = this.limitOf(siteId)
    const used = this.used(siteId)
    if (used < limit) return
    const now = this.clock.now()
    const reset = nextMonthStart(now)
    const renews = new Date(reset).toISOString().slice(0, 10)
    throw new OverBudgetError(
      limit === 0
        ? say`This site's plan includes no AI tokens (its ai_tokens_monthly is 0), so its modules cannot call the model; scale to a plan that has some (${op('listPlans')} lists each plan's ai_tokens_monthly).`
        : `This site has used its ${limit} AI tokens for ${monthOf(now)} (used: ${used}); the allowance renews on ${renews}.`,
      Math.ceil((reset - now) / 1000),
    )
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
