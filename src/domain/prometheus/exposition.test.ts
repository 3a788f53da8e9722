import { describe, expect, it } from 'vitest'
import { escapeLabelValue, numberText, renderExposition } from './exposition'

describe('renderExposition (text format 0.0.4)', () => {
  it('writes HELP and TYPE, then one line per sample with its labels', () => {
    expect(renderExposition([
      { name: 'berth_sites', help: 'Sites by status.', type: 'gauge', samples: [{ labels: { status: 'active' }, value: 3 }, { labels: { status: 'suspended' }, value: 1 }] },
      { name: 'berth_jobs_failed_total', help: 'Failed jobs.', type: 'counter', samples: [{ value: 0 }] },
    ])).toBe([
      '# HELP berth_sites Sites by status.',
      '# TYPE berth_sites gauge',
      'berth_sites{status="active"} 3',
      'berth_sites{status="suspended"} 1',
      '# HELP berth_jobs_failed_total Failed jobs.',
      '# TYPE berth_jobs_failed_total counter',
      'berth_jobs_failed_total 0',
      '',
    ].join('\n'))
  })

  it('writes a histogram as cumulative buckets ending at +Inf, then _sum and _count', () => {
    const text = renderExposition([{ name: 'd_seconds', help: 'Durations.', type: 'histogram', samples: [{ labels: { site: 'shop' }, bounds: [0.1, 1], counts: [2, 3, 1], sum: 4.5 }] }])
    expect(text.split('\n').slice(2, -1)).toEqual([
      'd_seconds_bucket{site="shop",le="0.1"} 2',
      'd_seconds_bucket{site="shop",le="1"} 5',
      'd_seconds_bucket{site="shop",le="+Inf"} 6',
      'd_seconds_sum{site="shop"} 4.5',
      'd_seconds_count{site="shop"} 6',
    ])
  })

  it('escapes backslash, quote and newline in label values, and backslash and newline in HELP', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd')
    const text = renderExposition([{ name: 'x', help: 'one\\two\nthree "q"', type: 'gauge', samples: [{ labels: { name: 'say "hi"\n' }, value: 1 }] }])
    expect(text).toContain('# HELP x one\\\\two\\nthree "q"\n')
    expect(text).toContain('x{name="say \\"hi\\"\\n"} 1\n')
  })

  it('spells infinities and NaN as the format does, and keeps a family without samples', () => {
    expect([numberText(Infinity), numberText(-Infinity), numberText(NaN), numberText(1.5e-7)]).toEqual(['+Inf', '-Inf', 'NaN', '1.5e-7'])
    expect(renderExposition([{ name: 'empty', help: 'None yet.', type: 'counter', samples: [] }])).toBe('# HELP empty None yet.\n# TYPE empty counter\n')
    expect(renderExposition([])).toBe('')
  })
})
