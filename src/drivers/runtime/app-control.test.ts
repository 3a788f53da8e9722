import { describe, expect, it } from 'vitest'
import { appControl, AppControlError } from './app-control'
import type { ExecOptions, ExecResult } from './types'

/** A runtime whose exec answers `output` (what berth-supervise printed) and records each call. */
function answering(output: string, exitCode = 0) {
  const calls: { argv: string[]; opts?: ExecOptions }[] = []
  const runtime = {
    exec: async (_slug: string, argv: string[], opts?: ExecOptions): Promise<ExecResult> => {
      calls.push({ argv, opts })
      return { exitCode, output }
    },
  }
  return { control: appControl(runtime), calls }
}

describe('appControl', () => {
  it('runs each verb through exec with its arguments and input, and reads its JSON line', async () => {
    const { control, calls } = answering('{"ok":true,"restarted":["web"]}\n')
    // An image from before the direct path says no port: the edge keeps the front (null).
    expect(await control.pushEnv('shop', { A: '1' })).toEqual({ restarted: ['web'], port: null })
    expect(calls[0].argv).toEqual(['/usr/local/bin/berth-supervise', 'env'])
    expect(calls[0].opts?.stdin).toBe('{"A":"1"}')
  })

  it('reads the live web\'s port from a switch, a settings push and the status, and retires through its own verb', async () => {
    expect(await answering('{"ok":true,"restarted":["web"],"port":3004}\n').control.pushEnv('shop', {})).toEqual({ restarted: ['web'], port: 3004 })
    expect(await answering('{"ok":true,"ms":412,"port":3001}\n').control.switchRelease('shop', '/home/site/app/releases/dep_1', 45)).toEqual({ ok: true, ms: 412, port: 3001 })
    expect(await answering('{"release":"dep_1","runtime":"node","env":true,"processes":[],"port":3002}\n').control.status('shop')).toMatchObject({ port: 3002 })
    const { control, calls } = answering('{"ok":true,"retiring":1}\n')
    await control.retire('shop')
    expect(calls[0].argv).toEqual(['/usr/local/bin/berth-supervise', 'retire'])
  })

  it('gives a failed switch as its answer, with the exit code and output, and waits longer than its timeout', async () => {
    const { control, calls } = answering('{"ok":false,"error":"the web process exited with code 1 before answering on 3001","exit_code":1,"output":"boom"}\n', 1)
    expect(await control.switchRelease('shop', '/home/site/app/releases/dep_1', 45)).toEqual({ ok: false, error: expect.stringContaining('code 1'), exit_code: 1, output: 'boom' })
    expect(calls[0].argv.slice(1)).toEqual(['switch', '/home/site/app/releases/dep_1', '--timeout', '45'])
    expect(calls[0].opts?.timeoutMs).toBeGreaterThan(45_000)
  })

  it('throws a refusal with the supervisor\'s words, and an unreadable answer as such', async () => {
    const refused = answering('{"ok":false,"error":"the supervisor is not running"}\n', 1).control
    await expect(refused.pushEnv('shop', {})).rejects.toMatchObject({ message: 'the supervisor is not running', refused: true })
    const garbled = answering('sh: berth-supervise: not found\n', 127).control
    const err = await garbled.pushDone('shop', 'psh_1', true, 'done').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(AppControlError)
    expect(err).toMatchObject({ refused: false, message: expect.stringContaining('not found') })
  })

  it('answers null for the status of a container that is not an app container', async () => {
    expect(await answering('exec failed: no such file\n', 126).control.status('shop')).toBeNull()
    const { control } = answering('{"release":null,"runtime":null,"env":false,"processes":[]}\n')
    expect(await control.status('shop')).toEqual({ release: null, runtime: null, env: false, processes: [] })
  })
})
