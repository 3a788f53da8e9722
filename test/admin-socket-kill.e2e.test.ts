import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { viaEdge } from './helpers/purchase'
import { adminKillKit, BALLAST, engineOf, type AdminKillKit } from './lab/admin-kill'
import { waitFor, type Lab } from './lab/cluster-lab'
import { labWithSite, stopLabWithFigures, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * The admin commands are clients of berth serve's admin socket (issue 37): killing one in the
 * middle of a move or an evacuation does not stop the work (berth serve finishes it), and a
 * berth serve killed -9 in the middle of a move finishes it at its next start. Each ends with the
 * site served once (one running container, on the node the store names), its files intact. On a
 * two-node lab of its own (test/lab; docs/testing.md).
 */
// BERTH_ADMKILL_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_ADMKILL_LAB_NAME ?? 'admkil'
let lab: Lab
let control: ControlPlane
let b: JoinedNode
let site: { slug: string; key: string }
const figures: Record<string, string> = {}
let { nodeOf, backups, ballast, servedOnceFrom } = {} as AdminKillKit

beforeAll(async () => {
  ({ lab, control, b, site } = await labWithSite(LAB_NAME, { image: 'berth/static:1', sku: 'svc_starter_monthly', slugPrefix: 'ak', activeWithinMs: 120_000 }))
  ;({ nodeOf, backups, ballast, servedOnceFrom } = adminKillKit(lab, control, site))
}, 300_000)

afterAll(async () => {
  expect(await stopLabWithFigures(LAB_NAME, { lab, control }, 'admin socket kill e2e', figures)).toEqual([])
}, 60_000)

/** Starts `berth sites move` in node A and waits until its restore runs on the target (the switch made); the archive. */
async function moveCaughtRestoring(to: string) {
  const before = new Set((await backups()).map((x) => x.id))
  const move = lab.spawn('A', [control.binary, 'sites', 'move', site.slug, '--to', to, '--json', '--config', control.configPath])
  const archive = await waitFor('the move restoring its backup on the target', 90_000, async () => {
    const restoring = (await backups()).find((x) => !before.has(x.id) && x.status === 'restoring')
    return restoring && (await lab.docker(engineOf(to), 'volume', 'ls', '-q', '--filter', `label=dev.berth.site-slug=${site.slug}`)) !== '' && restoring
  })
  return { move, archive }
}

describe('work berth serve does for an admin command', () => {
  it('a move whose command is killed -9 in the middle of its restore is finished by berth serve, which never stopped', async () => {
    const from = (await nodeOf(site.slug))!
    const to = from === 'control' ? b.id : 'control'
    const token = await ballast('client-killed')
    const { move, archive } = await moveCaughtRestoring(to)
    // The server's progress, streamed as it came (with --json, as JSON lines on stderr).
    expect(move.output()).toContain(`{"progress":"moving ${site.slug} to ${to}:`)
    await move.kill('SIGKILL')
    const killed = performance.now()
    const done = await waitFor('berth serve to finish the restore', 120_000, async () => (await backups()).find((x) => x.id === archive.id && x.status !== 'restoring'))
    expect([done.status, done.restored_at !== null], JSON.stringify(done)).toEqual(['ready', true])
    const took = await servedOnceFrom(to, token, 60_000, killed)
    // Nothing was taken over: the move ran in berth serve all along.
    expect(control.berth.output()).not.toContain('resuming jobs interrupted by a stop')
    expect(control.berth.output()).toContain('"msg":"site moved"')
    figures['move, client killed'] = `served from ${to} ${took.toFixed(0)} ms after the kill`
  }, 240_000)

  it('a move during which berth serve is killed -9 is finished at its next start', async () => {
    const from = (await nodeOf(site.slug))!
    const to = from === 'control' ? b.id : 'control'
    const token = await ballast('serve-killed')
    const { move, archive } = await moveCaughtRestoring(to)
    await control.berth.kill9()
    const killed = performance.now()
    // The command loses its server: it ends, saying so (exit 1), and changes nothing itself.
    await move.proc.exited
    expect(move.proc.exitCode, move.output()).toBe(1)
    await control.berth.restart()
    expect(control.berth.output()).toContain('resuming jobs interrupted by a stop')
    const done = await waitFor('the restarted berth serve to finish the restore', 120_000, async () => (await backups()).find((x) => x.id === archive.id && x.status !== 'restoring'))
    expect([done.status, done.restored_at !== null], JSON.stringify(done)).toEqual(['ready', true])
    const took = await servedOnceFrom(to, token, 90_000, killed)
    figures['move, berth serve killed'] = `served from ${to} ${took.toFixed(0)} ms after the kill (restart included)`
  }, 300_000)

  it('an evacuation whose command is killed -9 is finished by berth serve: the lost node\'s site serves once from the control plane', async () => {
    const move = async (to: string) => {
      const moved = await control.cli(['sites', 'move', site.slug, '--to', to], { allowFailure: true, timeoutMs: 180_000 })
      expect(moved.code, moved.stdout + moved.stderr).toBe(0)
      // The progress line first, the move's steps (test/move-progress.e2e), then what berth serve did.
      expect(moved.stdout).toMatch(new RegExp(`^moving ${site.slug} to ${to}: .*\\n(  ${site.slug}: .*\\n)+Moved ${site.slug} from `))
    }
    if ((await nodeOf(site.slug)) !== 'control') await move('control')
    const token = await ballast('evacuated')
    // The move's archive holds the page and the ballast: what the evacuation restores.
    await move(b.id)
    await lab.powerOff('B')
    await waitFor('B down', 30_000, async () => {
      const { json } = await control.cli(['nodes', 'list', '--json'], { allowFailure: true })
      return ((json?.nodes ?? json ?? []) as { id: string; state: string }[]).find((n) => n.id === b.id)?.state === 'down'
    })
    const before = new Set((await backups()).filter((x) => x.status === 'restoring').map((x) => x.id))
    const evacuate = lab.spawn('A', [control.binary, 'nodes', 'evacuate', b.id, '--json', '--config', control.configPath])
    await waitFor('the evacuation restoring on the control plane', 90_000, async () => (await backups()).some((x) => !before.has(x.id) && x.status === 'restoring'))
    await evacuate.kill('SIGKILL')
    const killed = performance.now()
    let last = ''
    await waitFor('the site served from the control plane with its files', 120_000, async () => {
      const res = await viaEdge(control.url, site.slug)
      last = `${res.status} ${res.text.slice(0, 60)}`
      return res.status === 200 && res.text === token
    }).catch((err) => {
      throw new Error(`${(err as Error).message}; last: ${last}\n${control.berth.output().split('\n').filter((l) => l.includes(site.slug)).slice(-20).join('\n')}`)
    })
    const took = performance.now() - killed
    const onA = (await lab.docker('A', 'ps', '-q', '--filter', `label=dev.berth.site-slug=${site.slug}`, '--filter', 'status=running')).split('\n').filter(Boolean)
    expect(onA).toHaveLength(1)
    expect(await lab.docker('A', 'exec', onA[0]!, 'stat', '-c', '%s', '/home/site/ballast.bin')).toBe(String(BALLAST))
    expect(control.berth.output()).toContain('"msg":"node evacuated"')
    figures['evacuation, client killed'] = `served from the control plane ${took.toFixed(0)} ms after the kill`
  }, 360_000)
})
