import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { OverBudgetError, DomainError } from '../domain/errors'
import { AiProviderError, type AiProvider, type ChatInput, type ChatResult } from '../drivers/ai/types'
import { ManualClock } from '../lib/clock'
import { migrate } from '../store/migrate'
import { openStore } from '../store/store'
import { AiBudget, askModel, mostTokens, type BoundedChatInput } from './ai-calls'
import { AiUsageRepository } from './ai-usage-repository'

/**
 * The AI allowance on a real SQLite store with migrations applied; the provider is a stand-in
 * that answers when told to (test/ai-modules.e2e.test.ts runs the same over HTTP on the binary).
 */
const dir = mkdtempSync(join(tmpdir(), 'ai-budget-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A provider whose calls wait until `finish` and then cost `cost` tokens (or fail). */
function slowProvider(cost: number) {
  const waiting: (() => void)[] = []
  let calls = 0
  let fail = false
  const provider = {
    name: 'stand-in', model: 'm',
    async chat(_input: ChatInput): Promise<ChatResult> {
      calls++
      await new Promise<void>((done) => waiting.push(done))
      if (fail) throw new AiProviderError('unavailable', 'The stand-in failed')
      return { text: 'ok', usage: { promptTokens: cost - 1, completionTokens: 1, totalTokens: cost } }
    },
  } as unknown as AiProvider
  return {
    provider,
    calls: () => calls,
    failing: () => (fail = true),
    /** Lets every waiting call answer. */
    finish: async () => {
      while (waiting.length) waiting.shift()!()
      await Bun.sleep(0)
    },
  }
}

function setup(allowance: number) {
  const store = openStore(join(dir, `${crypto.randomUUID()}.db`))
  migrate(store)
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 12))
  const budget = new AiBudget(new AiUsageRepository(store), clock, () => allowance)
  return { store, clock, budget }
}

const INPUT: BoundedChatInput = { maxTokens: 200, messages: [{ role: 'user', content: 'x'.repeat(93) }] }

describe('AiBudget with askModel', () => {
  it('lets calls sent together take only what the allowance holds; the rest are refused before the provider', async () => {
    const most = mostTokens(INPUT)
    expect(most).toBe(3 + 93 + 4 + 200)
    const { budget } = setup(most * 3 - 1) // room for two at their most, not three
    const ai = slowProvider(120)
    const calls = Array.from({ length: 20 }, () => askModel(ai.provider, budget, 'site-1', INPUT).then(() => 'ok', (err: unknown) => err))
    await Bun.sleep(0)
    expect(ai.calls()).toBe(2)
    await ai.finish()
    const results = await Promise.all(calls)
    expect(results.filter((r) => r === 'ok')).toHaveLength(2)
    const refused = results.filter((r) => r !== 'ok') as OverBudgetError[]
    expect(refused).toHaveLength(18)
    for (const err of refused) {
      expect(err).toBeInstanceOf(OverBudgetError)
      expect(err.message).toContain('under way')
      expect(err.retryAfterSeconds).toBe(10)
    }
    // Settled to what they cost: 240 of 899, so two more fit at their most, and a third does not.
    expect(budget.used('site-1')).toBe(240)
    await Promise.all([askModel(ai.provider, budget, 'site-1', INPUT), (async () => {
      await Bun.sleep(0)
      await ai.finish()
    })()])
    expect(budget.used('site-1')).toBe(360)
  })

  it('never records more than the allowance, however many calls race for it', async () => {
    const allowance = 5_000
    const { budget } = setup(allowance)
    const ai = slowProvider(mostTokens(INPUT)) // each costs its most: the worst case
    for (let round = 0; round < 5; round++) {
      const calls = Array.from({ length: 20 }, () => askModel(ai.provider, budget, 'site-1', INPUT).catch(() => null))
      await Bun.sleep(0)
      await ai.finish()
      await Promise.all(calls)
      expect(budget.used('site-1')).toBeLessThanOrEqual(allowance)
    }
    expect(budget.used('site-1')).toBe(Math.floor(allowance / mostTokens(INPUT)) * mostTokens(INPUT))
    // Spent: refused until the 1st, without reaching the provider.
    const before = ai.calls()
    const err = await askModel(ai.provider, budget, 'site-1', INPUT).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OverBudgetError)
    expect((err as OverBudgetError).message).toMatch(/left for 2026-11 .* renews on 2026-12-01/)
    expect((err as OverBudgetError).retryAfterSeconds).toBe((Date.UTC(2026, 11, 1) - Date.UTC(2026, 10, 20, 12)) / 1000)
    expect(ai.calls()).toBe(before)
  })

  it('frees the whole reservation when the call fails, and counts nothing', async () => {
    const { budget } = setup(mostTokens(INPUT))
    const ai = slowProvider(50)
    ai.failing()
    const failed = askModel(ai.provider, budget, 'site-1', INPUT).catch((e: unknown) => e)
    await Bun.sleep(0)
    await ai.finish()
    const err = await failed
    expect(err).toBeInstanceOf(DomainError)
    expect((err as DomainError).kind).toBe('upstream_failed')
    expect(budget.used('site-1')).toBe(0)
    // The allowance is whole again: a call at its most fits.
    expect(() => budget.release(budget.reserve('site-1', mostTokens(INPUT)))).not.toThrow()
  })

  it('stops counting a reservation left by a crash after an hour', () => {
    const { budget, clock } = setup(1000)
    budget.reserve('site-1', 1000) // never settled: Berth stopped mid-call
    expect(() => budget.reserve('site-1', 1)).toThrow(OverBudgetError)
    clock.advance(60 * 60_000)
    expect(() => budget.reserve('site-1', 1000)).not.toThrow()
  })

  it('refuses every call on a plan with no tokens, naming the plans list', () => {
    const { budget } = setup(0)
    expect(() => budget.reserve('site-1', 1)).toThrow(/ai_tokens_monthly is 0/)
  })
})
