import { describe, expect, it } from 'vitest'
import { SessionTable, type Refusal, type Reservation, type SessionLimits } from './sessions'

/** The bounded session pools of the MCP door (issue 23). */
class Fake {
  closed = false
  async close() {
    this.closed = true
  }
}
const LIMITS: SessionLimits = { maxKeyed: 3, maxAnonymous: 2, perKey: 2, keyedIdleMs: 60_000, anonymousIdleMs: 10_000 }

function table(limits: Partial<SessionLimits> = {}) {
  let now = 1_000_000
  const t = new SessionTable<Fake>({ ...LIMITS, ...limits }, () => now)
  let n = 0
  /** Opens a session for `keyId`; its id and value, or the refusal. */
  const open = (keyId: string | null): { id: string; value: Fake } | Refusal => {
    const place = t.reserve(keyId)
    if ('retryAfterSeconds' in place) return place
    const id = `s${++n}`
    const value = new Fake()
    place.open(id, value)
    return { id, value }
  }
  return { t, open, advance: (ms: number) => (now += ms) }
}

describe('SessionTable', () => {
  it('refuses an anonymous session past its cap, with the seconds until the oldest is idle long enough', () => {
    const { t, open, advance } = table()
    open(null)
    advance(4_000)
    open(null)
    expect(open(null)).toEqual({ retryAfterSeconds: 6 })
    expect(t.size).toBe(2)
  })

  it('keeps keyed sessions apart: anonymous ones cannot take their places, nor they the anonymous ones', () => {
    const { open } = table()
    open(null)
    open(null)
    expect(open(null)).toHaveProperty('retryAfterSeconds')
    expect(open('k1')).toHaveProperty('id')
    expect(open('k2')).toHaveProperty('id')
    expect(open('k3')).toHaveProperty('id')
    expect(open('k4')).toHaveProperty('retryAfterSeconds')
  })

  it('closes idle sessions to make room when full, anonymous ones sooner than keyed ones', () => {
    const { t, open, advance } = table()
    const a = open(null) as { id: string; value: Fake }
    const k = open('k1') as { id: string; value: Fake }
    open(null)
    advance(10_001)
    t.touch(k.id)
    expect(open(null)).toHaveProperty('id')
    expect(a.value.closed).toBe(true)
    expect(t.touch(a.id)).toBeUndefined()
    advance(50_000)
    t.sweep()
    expect(k.value.closed).toBe(false)
  })

  it('closes a key\'s least recently used session when the key opens one past its own limit', () => {
    const { t, open, advance } = table()
    const first = open('k1') as { id: string; value: Fake }
    advance(1)
    const second = open('k1') as { id: string; value: Fake }
    advance(1)
    t.touch(first.id)
    expect(open('k1')).toHaveProperty('id')
    expect(second.value.closed).toBe(true)
    expect(first.value.closed).toBe(false)
    expect(t.size).toBe(2)
  })

  it('counts places being initialized, and gives them back when no session took them', () => {
    const { t } = table()
    const places = [t.reserve(null), t.reserve(null)] as Reservation<Fake>[]
    expect(t.reserve(null)).toEqual({ retryAfterSeconds: 1 })
    places[0]!.release()
    places[0]!.release()
    const again = t.reserve(null)
    expect(again).toHaveProperty('open')
    expect(t.reserve(null)).toHaveProperty('retryAfterSeconds')
  })

  it('frees the place of a session its client or transport closed', () => {
    const { t, open } = table()
    const a = open(null) as { id: string }
    open(null)
    t.remove(a.id)
    t.remove(a.id)
    expect(open(null)).toHaveProperty('id')
    expect(open(null)).toHaveProperty('retryAfterSeconds')
  })
})
