import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { waitingFor } from './exec'

// The readiness check looped inside the container (here: in a local sh, as the container's sh runs it).
async function run(cmd: string[]): Promise<{ code: number; ms: number; err: string }> {
  const started = performance.now()
  const p = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe' })
  const code = await p.exited
  return { code, ms: performance.now() - started, err: await new Response(p.stderr).text() }
}

describe('waitingFor', () => {
  it('answers as soon as the check passes, polled every 20 ms in one process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-ready-'))
    try {
      const flag = join(dir, 'up')
      setTimeout(() => writeFileSync(flag, ''), 200)
      const { code, ms } = await run(waitingFor({ cmd: ['test', '-e', flag] }).cmd)
      expect(code).toBe(0)
      expect(ms).toBeGreaterThanOrEqual(190)
      expect(ms).toBeLessThan(1500)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps a check\'s quotes and substitutions as they were (Redis\'s PING)', async () => {
    expect((await run(waitingFor({ cmd: ['sh', '-c', '[ "$(echo PONG)" = PONG ]'] }).cmd)).code).toBe(0)
    expect((await run(waitingFor({ cmd: ['sh', '-c', `[ "it's" = "$0" ]`, "it's"] }).cmd)).code).toBe(0)
  })

  it('fails after its polls with the last check\'s output', async () => {
    const { code, err } = await run(waitingFor({ cmd: ['sh', '-c', 'echo "no server on the socket" >&2; exit 2'] }).cmd)
    expect(code).toBe(1)
    expect(err.trim()).toBe('no server on the socket')
  }, 15_000)
})
