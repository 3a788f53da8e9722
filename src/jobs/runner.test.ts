import { describe, expect, it } from 'vitest'
import { domainStore } from '../../test/helpers/domain-store'
import { JobRunner, type JobHandler } from './runner'

/**
 * The job runner's crash recovery, on a real store: only `berth serve` runs jobs (issue 37), so
 * a job marked running at its start was left so by its previous run, killed in the middle, and
 * is run again; a job it runs itself (runHere) is seen under way while it runs.
 */
function setup() {
  const t = domainStore()
  const ran: string[] = []
  const handler: JobHandler = {
    run: async (subject) => {
      ran.push(subject)
    },
    failed: async () => {},
  }
  const runner = () => new JobRunner(t.store, t.clock, t.log, { restore: handler })
  const job = (subject: string) => t.store.sqlite.query('SELECT status, lease_until AS lease FROM jobs WHERE subject_id = ? ORDER BY rowid DESC').get(subject) as { status: string; lease: number | null }
  return { t, ran, runner, job }
}

async function until(what: string, ok: () => boolean, withinMs = 3000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`)
    await Bun.sleep(10)
  }
}

describe('the job runner of berth serve', () => {
  it('runs again at its start every job its previous run left running, whether the handler or runHere ran it', async () => {
    const s = setup()
    // A previous run left two jobs running: one of its own, and one runHere was doing (a move's restore).
    s.t.store.sqlite.run("INSERT INTO jobs (id, kind, subject_id, status, attempts, run_after, created_at, updated_at) VALUES ('j1', 'restore', 'own', 'running', 1, 0, 0, 0)")
    s.t.store.sqlite.run("INSERT INTO jobs (id, kind, subject_id, status, attempts, run_after, created_at, updated_at) VALUES ('j2', 'restore', 'moved', 'running', 1, 0, 0, 0)")
    const serve = s.runner()
    serve.start()
    try {
      await until('both ran', () => s.ran.length === 2)
      expect(s.ran.sort()).toEqual(['moved', 'own'])
      await until('both succeeded', () => s.job('own').status === 'succeeded' && s.job('moved').status === 'succeeded')
      expect(s.t.logged('resuming jobs interrupted by a stop')).toBe(true)
    } finally {
      await serve.stop()
    }
  })

  it('leaves a job it runs itself (runHere) to that work while it runs, and records how it ended; no lease is written', async () => {
    const s = setup()
    const serve = s.runner()
    serve.start()
    try {
      let release!: () => void
      const work = serve.runHere('restore', 'archive-1', () => new Promise<void>((r) => (release = r)))
      expect(s.job('archive-1')).toEqual({ status: 'running', lease: null })
      await Bun.sleep(100)
      // Not run by the handler meanwhile: the work is under way here.
      expect(s.ran).toEqual([])
      release()
      await work
      expect(s.job('archive-1')).toEqual({ status: 'succeeded', lease: null })
      await expect(serve.runHere('restore', 'archive-2', async () => { throw new Error('disk full') })).rejects.toThrow('disk full')
      expect(s.job('archive-2').status).toBe('failed')
    } finally {
      await serve.stop()
    }
  })
})
