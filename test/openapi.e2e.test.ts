import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBerth, type Berth } from './helpers/binary'

const ROOT = resolve(import.meta.dirname, '..')
let berth: Berth

beforeAll(async () => {
  berth = await startBerth()
})
afterAll(() => berth?.dispose())

describe("the compiled binary's openapi.json", () => {
  it('passes redocly lint (recommended rules, trailing slashes allowed) with no error and no warning', async () => {
    const res = await fetch(`${berth.url}/api/v1/openapi.json`)
    expect(res.status).toBe(200)
    const file = join(mkdtempSync(join(tmpdir(), 'berth-openapi-')), 'openapi.json')
    writeFileSync(file, await res.text())
    const lint = spawnSync(join(ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], {
      cwd: ROOT, encoding: 'utf8', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, timeout: 120_000,
    })
    let report: { totals?: { errors: number; warnings: number }; problems?: { ruleId: string; message: string; location?: { pointer?: string }[] }[] }
    try {
      report = JSON.parse(lint.stdout)
    } catch {
      throw new Error(`redocly printed no report (exit ${lint.status}):\n${lint.stdout}\n${lint.stderr}`)
    }
    const problems = (report.problems ?? []).map((p) => `${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer ?? '?'}`)
    expect(problems).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
    expect(lint.status).toBe(0)
  }, 150_000)
})
