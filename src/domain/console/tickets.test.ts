import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../lib/clock'
import { asDomainError, OverBudgetError } from '../errors'
import { ConsoleTickets, TICKET_LIMITS, type ConsoleGrant } from './tickets'

// Issue 36, item 7: issuing console tickets is bounded per site and per account, so that one
// account's flood is refused and never evicts another account's pending ticket.
const grantOf = (account: string, site = `${account}-site`): ConsoleGrant => ({ siteId: site, slug: site, accountId: account, keyId: `${account}-key`, keyPrefix: 'svc_12345678' })

/** Issues until refused (at most `max`); how many were issued and the refusal. */
function flood(tickets: ConsoleTickets, grant: (i: number) => ConsoleGrant, max: number): { issued: number; refusal: unknown } {
  for (let i = 0; i < max; i++) {
    try {
      tickets.issue(grant(i))
    } catch (err) {
      return { issued: i, refusal: err }
    }
  }
  return { issued: max, refusal: null }
}

describe('console tickets under a flood', () => {
  it("leaves another account's ticket valid while one account asks for 25,000", () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock)
    const other = tickets.issue(grantOf('bob')).ticket
    // The flooding account spreads its asks over many sites and over time, within each window.
    for (let i = 0; i < 25_000; i++) {
      try {
        tickets.issue(grantOf('mallory', `site-${i % 50}`))
      } catch (err) {
        expect(err).toBeInstanceOf(OverBudgetError)
      }
      if (i % 100 === 0) clock.advance(100)
    }
    expect(tickets.peek(other).state).toBe('valid')
    expect(tickets.take(other)).toMatchObject({ state: 'valid', grant: { accountId: 'bob' } })
  })

  it('refuses a site its seventh pending ticket (429, the limit and when to retry in the message)', () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock)
    const { issued, refusal } = flood(tickets, () => grantOf('alice', 'shop'), 100)
    expect(issued).toBe(TICKET_LIMITS.pendingPerSite)
    const e = asDomainError(refusal)!
    expect(e.kind).toBe('over_budget')
    expect(e.message).toBe("Site 'shop' has 6 unused console tickets, the most it may; connect with one, or retry in 60 seconds when the oldest expires.")
    expect((refusal as OverBudgetError).retryAfterSeconds).toBe(60)
    // Another site of the same account still gets one; spending one makes room on this one.
    expect(() => tickets.issue(grantOf('alice', 'blog'))).not.toThrow()
    clock.advance(60_000)
    expect(() => tickets.issue(grantOf('alice', 'shop'))).not.toThrow()
  })

  it('frees a place when a ticket is spent', () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock)
    const first = tickets.issue(grantOf('alice', 'shop')).ticket
    flood(tickets, () => grantOf('alice', 'shop'), TICKET_LIMITS.pendingPerSite - 1)
    expect(() => tickets.issue(grantOf('alice', 'shop'))).toThrow(OverBudgetError)
    tickets.take(first)
    expect(() => tickets.issue(grantOf('alice', 'shop'))).not.toThrow()
  })

  it('refuses an account its 21st pending ticket across its sites', () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock)
    const { issued, refusal } = flood(tickets, (i) => grantOf('alice', `site-${i}`), 100)
    expect(issued).toBe(TICKET_LIMITS.pendingPerAccount)
    expect(asDomainError(refusal)?.message).toBe('This account holds 20 unused console tickets, the most it may; connect with one, or retry in 60 seconds when the oldest expires.')
  })

  it('refuses an account its 61st ticket within ten minutes, spent or not', () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock)
    let issued = 0
    for (let i = 0; i < 100; i++) {
      try {
        tickets.take(tickets.issue(grantOf('alice', 'shop')).ticket)
        issued++
      } catch (err) {
        expect(asDomainError(err)?.message).toMatch(/^This account was issued 60 console tickets in the last 10 minutes, the most it may; retry in \d+ seconds\.$/)
        break
      }
      clock.advance(1000)
    }
    expect(issued).toBe(TICKET_LIMITS.issuesPerWindow)
    // Ten minutes after the first, the first place is free again.
    clock.advance(10 * 60_000 - 60_000)
    expect(() => tickets.issue(grantOf('alice', 'shop'))).not.toThrow()
  })

  it('forgets spent tickets first when the box holds its most, and refuses (503) rather than evict a pending one', () => {
    const clock = new ManualClock()
    const tickets = new ConsoleTickets(clock, 60_000, { maxTickets: 10, pendingPerAccount: 100, pendingPerSite: 100, issuesPerWindow: 1000 })
    const spent = Array.from({ length: 5 }, () => tickets.issue(grantOf('alice')).ticket)
    for (const t of spent) tickets.take(t)
    const pending = Array.from({ length: 9 }, (_, i) => tickets.issue(grantOf(`acc-${i}`)).ticket)
    expect(pending.every((t) => tickets.peek(t).state === 'valid')).toBe(true)
    expect(spent.filter((t) => tickets.peek(t).state === 'unknown')).toHaveLength(4)
    tickets.issue(grantOf('acc-x'))
    let refusal: unknown
    try {
      tickets.issue(grantOf('acc-y'))
    } catch (err) {
      refusal = err
    }
    expect(asDomainError(refusal)?.kind).toBe('unavailable')
    expect(pending.every((t) => tickets.peek(t).state === 'valid')).toBe(true)
  })
})
