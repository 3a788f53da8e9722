import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { type Lab } from './lab/cluster-lab'
import { labWithSite, nodeOfSite, stopLabWithFigures, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * `berth sites move` prints what berth serve does as it does it (issue 37: "a move streams its
 * steps"): the compiled binary's output is read while it runs, each line timestamped when it
 * first shows, so a step printed only with the result fails. With --json the steps are the
 * server's {"progress", "step"} lines on stderr, the result alone on stdout. On a two-node lab
 * of its own (test/lab; docs/testing.md).
 */
// BERTH_MOVEPRG_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_MOVEPRG_LAB_NAME ?? 'mvprog'
let lab: Lab
let control: ControlPlane
let b: JoinedNode
let site: { slug: string; key: string }
const figures: Record<string, string> = {}

beforeAll(async () => {
  ({ lab, control, b, site } = await labWithSite(LAB_NAME, { image: 'berth/static:1', sku: 'svc_starter_monthly', slugPrefix: 'mp', activeWithinMs: 120_000 }))
}, 300_000)

afterAll(async () => {
  expect(await stopLabWithFigures(LAB_NAME, { lab, control }, 'move progress e2e', figures)).toEqual([])
}, 60_000)

const nodeOf = (slug: string) => nodeOfSite(control, slug)

/** The step lines of a move of `slug` from `from` to `to`, in order, as berth serve words them (admin/steps.ts). */
const stepLines = (slug: string, from: string, to: string) => [
  new RegExp(`^moving ${slug} to ${to}: `),
  new RegExp(`^  ${slug}: backup taken \\(archive [0-9a-f-]{36}, [0-9.]+ (KiB|MiB), [0-9.]+ s\\)$`),
  new RegExp(`^  ${slug}: stopped on ${from}, pinned to ${to}; `),
  new RegExp(`^  ${slug}: volume made on ${to}$`),
  new RegExp(`^  ${slug}: files restored on ${to} \\([0-9.]+ (KiB|MiB), [0-9.]+ s\\)$`),
  new RegExp(`^  ${slug}: started on ${to}, answering there$`),
  new RegExp(`^  ${slug}: serving from ${to} \\(did not serve for [0-9.]+ s\\)$`),
  new RegExp(`^  ${slug}: old volume removed from ${from}$`),
  new RegExp(`^Moved ${slug} from ${from} to ${to}: `),
]

describe('a move streams its steps', () => {
  it('prints each step as berth serve reports it, in order, the first well before the command ends', async () => {
    const from = (await nodeOf(site.slug))!
    const to = from === 'control' ? b.id : 'control'
    // Some files, so that the restore takes a moment.
    const res = await api(control.url, 'POST', `/sites/${site.slug}/files/write/`, { key: site.key, body: { path: 'public/index.html', content: 'x'.repeat(200_000) } })
    expect(res.status, res.text).toBeLessThan(300)

    const started = performance.now()
    const move = lab.spawn('A', [control.binary, 'sites', 'move', site.slug, '--to', to, '--config', control.configPath])
    // Each line with the time it first showed, read while the command runs.
    const seen: { line: string; at: number }[] = []
    const look = () => {
      const lines = move.output().split('\n').slice(0, -1)
      for (const line of lines.slice(seen.length)) seen.push({ line, at: performance.now() - started })
    }
    let exited = false
    void move.proc.exited.then(() => (exited = true))
    while (!exited) {
      look()
      await Bun.sleep(10)
    }
    const exitAt = performance.now() - started
    look()
    expect(move.proc.exitCode, move.output()).toBe(0)

    // A target that lacks the site's image gets it first, while the site serves: a line of its own, second.
    const carried = seen.findIndex((s) => s.line.includes(': image berth/'))
    if (carried !== -1) {
      expect(carried).toBe(1)
      expect(seen[1]!.line).toMatch(new RegExp(`^  ${site.slug}: image berth/static:1 carried to ${to} \\([0-9.]+ s\\), the site serving meanwhile$`))
      figures['image carried first'] = `${seen[1]!.at.toFixed(0)} ms`
      seen.splice(1, 1)
    }
    const want = stepLines(site.slug, from, to)
    expect(seen.map((s) => s.line), move.output()).toHaveLength(want.length)
    seen.forEach((s, i) => expect(s.line).toMatch(want[i]!))
    // Streamed: the backup's line shows while the rest of the move (stop, restore, start, the
    // edge's first answer) still runs, not with the result.
    const backupAt = seen[1]!.at
    const resultAt = seen.at(-1)!.at
    expect(resultAt - backupAt, JSON.stringify(seen)).toBeGreaterThan(500)
    expect(exitAt - backupAt).toBeGreaterThan(500)
    const names = ['heading', 'backup', 'stopped', 'volume', 'restored', 'started', 'serving', 'old volume removed', 'result']
    figures['human move (ms from its start)'] = `${seen.map((s, i) => `${names[i]} ${s.at.toFixed(0)}`).join(', ')}, exit ${exitAt.toFixed(0)}`
  }, 240_000)

  it('with --json, sends the steps as {"progress", "step"} lines on stderr, and only the result on stdout', async () => {
    const from = (await nodeOf(site.slug))!
    const to = from === 'control' ? b.id : 'control'
    const moved = await control.cli(['sites', 'move', site.slug, '--to', to, '--json'], { allowFailure: true, timeoutMs: 180_000 })
    expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    expect(moved.json).toMatchObject({ slug: site.slug, from, to })
    const lines = moved.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { progress: string; step?: { step: string; slug: string } })
    expect(lines.map((l) => l.step?.step ?? 'heading').filter((k, i) => !(i === 1 && k === 'image_carried'))).toEqual(['heading', 'backup_taken', 'stopped', 'volume_made', 'files_restored', 'started', 'serving', 'old_volume_removed'])
    expect(lines.slice(1).every((l) => l.step!.slug === site.slug && l.progress.startsWith(`  ${site.slug}: `))).toBe(true)
    expect(lines.find((l) => l.step?.step === 'serving')!.step).toMatchObject({ node: to, outage_ms: moved.json.unavailable_ms })
  }, 240_000)
})
