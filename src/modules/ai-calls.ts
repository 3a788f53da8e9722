import { AiProviderError, type AiProvider, type ChatInput, type ChatResult } from '../drivers/ai/types'
import type { Clock } from '../lib/clock'
import { op, OverBudgetError, say, upstreamFailed, upstreamTimeout } from '../domain/errors'
import type { AiUsageRepository } from './ai-usage-repository'

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7)
const nextMonthStart = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}
/**
 * How long a reservation counts when its call never settles it (Berth stopped mid-call): longer
 * than any call can last (three attempts of at most ai.timeout_seconds, 600 s, and the waits).
 */
const RESERVATION_TTL_MS = 60 * 60_000
/** Retry-After when the allowance is held by calls under way rather than spent. */
const HELD_RETRY_SECONDS = 10

/** A model call's input with its answer bounded: what it may cost is known before it is sent. */
export type BoundedChatInput = ChatInput & { maxTokens: number }

/** Tokens held for one call under way; settled or released exactly once. */
export interface Reservation {
  readonly id: string
  readonly siteId: string
  readonly tokens: number
}

/**
 * The most a call can cost, in tokens: the prompt at one token a byte (a byte-level tokenizer,
 * as OpenAI's and Llama's are, never makes more tokens than bytes; 4 more a message and 3 for
 * the reply's start, as OpenAI counts a chat) plus the answer's `max_tokens`.
 */
export function mostTokens(input: BoundedChatInput): number {
  let bytes = 3
  for (const m of input.messages) bytes += Buffer.byteLength(m.content) + 4
  return bytes + input.maxTokens
}

/**
 * Each site's monthly allowance of model tokens, its plan's `ai_tokens_monthly`, counted in the
 * store per UTC calendar month from what the provider reports it used. Before a call, the most it
 * can cost is reserved in one statement that succeeds only while the month's use, the tokens
 * other calls under way hold and this call's most fit in the allowance; after it, the
 * reservation becomes what the call cost (or goes, when it failed). So calls sent together can
 * never spend more than the allowance between them. The count resets on the 1st.
 */
export class AiBudget {
  /** `limitOf` gives a site's allowance (its plan's), read on every call so a plan change counts at once. */
  constructor(private repo: AiUsageRepository, private clock: Clock, readonly limitOf: (siteId: string) => number) {}

  /** Tokens the site used this month (settled calls only). */
  used(siteId: string): number {
    const now = this.clock.now()
    return this.repo.usage(siteId, monthOf(now), now).used
  }

  /**
   * Holds `tokens` of the site's allowance for one call. Throws OverBudgetError (429 with
   * Retry-After: until the 1st when the month's use leaves no room, a few seconds when calls
   * under way hold it) when they do not fit.
   */
  reserve(siteId: string, tokens: number): Reservation {
    const now = this.clock.now()
    const limit = this.limitOf(siteId)
    const month = monthOf(now)
    const id = crypto.randomUUID()
    if (this.repo.reserve({ id, siteId, tokens, limit, month, now, expiresAt: now + RESERVATION_TTL_MS })) return { id, siteId, tokens }
    const { used, held } = this.repo.usage(siteId, month, now)
    const reset = nextMonthStart(now)
    const renews = new Date(reset).toISOString().slice(0, 10)
    if (limit === 0) {
      throw new OverBudgetError(say`This site's plan includes no AI tokens (its ai_tokens_monthly is 0), so its modules cannot call the model; scale to a plan that has some (${op('listPlans')} lists each plan's ai_tokens_monthly).`, Math.ceil((reset - now) / 1000))
    }
    if (used + tokens > limit) {
      throw new OverBudgetError(`This site has ${Math.max(0, limit - used)} of its ${limit} AI tokens left for ${month} (used: ${used}), fewer than this call may cost (${tokens}); the allowance renews on ${renews}.`, Math.ceil((reset - now) / 1000))
    }
    throw new OverBudgetError(`Model calls under way hold ${held} of this site's ${limit} AI tokens for ${month} (used: ${used}), and this call may cost ${tokens}; try again in a few seconds.`, HELD_RETRY_SECONDS)
  }

  /** The call cost `tokens` (as the provider counted them): counted this month; the rest of its reservation is free again. */
  settle(held: Reservation, tokens: number): void {
    this.repo.settle(held.id, held.siteId, monthOf(this.clock.now()), tokens)
  }

  /** The call failed: its whole reservation is free again. */
  release(held: Reservation): void {
    this.repo.release(held.id)
  }
}

/**
 * One chat completion for a site's module: the most it can cost reserved first (refused with 429
 * when the site's allowance cannot cover it), settled to what it cost, released when it failed;
 * the provider's failures turned into the domain's (504 on a timeout, 502 for the rest, with the
 * provider's own explanation).
 */
export async function askModel(provider: AiProvider, budget: AiBudget, siteId: string, input: BoundedChatInput): Promise<ChatResult> {
  const held = budget.reserve(siteId, mostTokens(input))
  let result: ChatResult
  try {
    result = await provider.chat(input)
  } catch (err) {
    budget.release(held)
    if (err instanceof AiProviderError) throw err.kind === 'timeout' ? upstreamTimeout(err.message) : upstreamFailed(err.message)
    throw err
  }
  budget.settle(held, result.usage.totalTokens)
  return result
}

/** A model's answer without the Markdown code fence some models wrap a document in. */
export function withoutFence(text: string): string {
  const m = /^\s*```[\w-]*\s*\n([\s\S]*?)\n```\s*$/.exec(text)
  return (m ? m[1]! : text).trim()
}
