import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startedUp, startingUp, waitingFor } from './exec'

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

// The readiness poll, the provisioning and the probe in one process (as in the container), read back with startedUp.
async function together(ready: string, provision: string, probe: string, stdin = ''): Promise<ReturnType<typeof startedUp>> {
  const exec = startingUp({ cmd: ['sh', '-c', ready] }, { cmd: ['sh', '-c', provision], stdin, env: ['SECRET=made $(not run) \'x\''] }, { cmd: ['sh', '-c', probe], env: ['PASSWORD=pw with "quotes"'] })!
  const p = Bun.spawn(exec.cmd, { stdin: new Blob([String(exec.stdin)]), stdout: 'pipe', stderr: 'pipe', env: Object.fromEntries(exec.env!.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])) })
  const code = await p.exited
  return startedUp({ code, out: await new Response(p.stdout).text(), err: await new Response(p.stderr).text(), bytes: 0 })
}

describe('startingUp', () => {
  it('gives provisioning the input and its own variables, the probe its own, and tells their outputs apart', async () => {
    const step = await together('true', 'cat; echo "[$SECRET]"; echo "[${PASSWORD-unset}]"', 'echo "probe [$PASSWORD] [${SECRET-unset}]"', 'SET USER site\n')
    expect(step).toMatchObject({ stage: 'probed', provisioned: 'SET USER site\n[made $(not run) \'x\']\n[unset]\n', probe: { code: 0, out: 'probe [pw with "quotes"] [unset]\n' } })
  })

  it('keeps the probe\'s own failure for the caller to retry', async () => {
    const step = await together('true', 'echo OK', 'echo "no route" >&2; exit 2')
    expect(step).toMatchObject({ stage: 'probed', provisioned: 'OK\n', probe: { code: 2, err: 'no route\n' } })
  })

  it('stops at a failed provisioning with its output, before any probe', async () => {
    const step = await together('true', 'echo "ERR wrong" ; exit 3', 'echo probed')
    expect(step).toEqual({ stage: 'unprovisioned', code: 3, out: 'ERR wrong\n', err: '' })
  })

  it('says a server that never got ready is still waiting, with its last check\'s output', async () => {
    const step = await together('echo "socket missing"; exit 1', 'echo made', 'echo probed')
    expect(step).toEqual({ stage: 'waiting', last: 'socket missing' })
  }, 15_000)

  it('is not offered when the steps run as different accounts', () => {
    expect(startingUp({ cmd: ['true'], user: 'postgres' }, { cmd: ['true'] }, { cmd: ['true'], user: 'postgres' })).toBeNull()
  })
})
