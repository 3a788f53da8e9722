import { Type as t } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { DateTime, Nullable, Uuid } from '../../domain/schema'
import { compileAnswerCheck } from './answer-check'
import { JsonCache } from './json-cache'

const Item = t.Object({ id: Uuid(), at: DateTime(), until: Nullable(DateTime()), nested: t.Array(t.Object({ at: t.String({ format: 'date-time' }) })) })
const check = compileAnswerCheck(t.Array(Item))
const good = { id: crypto.randomUUID(), at: new Date().toISOString(), until: null, nested: [{ at: '2026-11-25T17:00:00Z' }] }

describe('compileAnswerCheck', () => {
  it("accepts what Berth writes: toISOString's dates, RFC 3339 offsets, UUIDs", () => {
    expect(check.Check([good, { ...good, until: '2026-11-25T17:00:00.5+01:00', id: good.id.toUpperCase() }])).toBe(true)
  })

  it('rejects dates and ids of another form, at any depth, and anything else the schema forbids', () => {
    for (const bad of [
      { ...good, at: '2026-11-25 17:00:00' },
      { ...good, at: 'yesterday' },
      { ...good, until: '2026-11-25T17:00:00.000Z trailing' },
      { ...good, nested: [{ at: '1764090000000' }] },
      { ...good, id: 'not-a-uuid' },
      { ...good, id: undefined },
      { ...good, at: 1764090000000 },
    ]) expect(check.Check([good, bad]), JSON.stringify(bad)).toBe(false)
  })

  it('leaves the schema it was given as it was (the published document shows the formats)', () => {
    expect(Item.properties.at.format).toBe('date-time')
    expect(Item.properties.at.pattern).toBeUndefined()
  })
})

describe('JsonCache', () => {
  it('keeps the JSON until the version moves, and refuses an answer that does not match its schema', () => {
    let version = 1
    let made = 0
    const cache = new JsonCache<unknown[]>({ name: 'GET /items/', schema: t.Array(Item), version: () => version, maxBytes: 1 << 20 })
    const make = () => (made++, [good])
    expect(JSON.parse(cache.get('a', make))).toEqual([good])
    cache.get('a', make)
    expect(made).toBe(1)
    version++
    cache.get('a', make)
    expect(made).toBe(2)
    version++
    expect(() => cache.get('a', () => [{ ...good, at: 'soon' }])).toThrow(/GET \/items\/ would answer data that does not match its schema: \/0\/at/)
  })
})
