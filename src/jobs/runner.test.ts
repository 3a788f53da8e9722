import { describe, expect, it } from 'vitest'
import { domainStore } from '../../test/helpers/domain-store'
import { JobRunner, type JobHandler } from './runner'

/**
 * The job runner's hand-over between processes, on a real store: two runners on one SQLite file
 * stand for `berth serve` (started) and a CLI command that runs a job itself (runHere), each with
 * a wall clock of its own for the leases (a clock that stops moving is a process that stopped
 * renewing).
 */
const LEASE_MS = 150

function setup() {
  const t = domainStore()
  const ran: string[] = []
  const handler: JobHandler = {
    run: async (subject) => {
      ran.push(subject)
    },
    failed: async () => {},
  }
  let wall = 1_000_000
  const runner = (wallClock: () => number) => new JobRunner(t.store, t.clock, t.log, { restore: handler }, { wallClock, leaseMs: LEASE_MS })
  const job = (subject: string) => t.store.sqlite.query('SELECT status, lease_until AS lease FROM jobs WHERE subject_id = ? ORDER BY rowid DESC').get(subject) as { status: string; lease: number | null }
  return { t, ran, runner, job, wall: { now: () => wall, advance: (ms: number) => (wall += ms) } }
}

async function until(what: string, ok: () => boolean, withinMs = 3000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`)
    await Bun.sleep(10)
  }
}

describe('jobs another process runs itself (runHere)', () => {
  it('are left to that process while it renews its lease, through the server\'s start and its passes', async () => {
    const s = setup()
    const serve = s.runner(s.wall.now)
    const cli = s.runner(s.wall.now)
    let release!: () => void
    const work = cli.runHere('restore', 'archive-1', () => new Promise<void>((r) => (release = r)))
    expect(s.job('archive-1')).toEqual({ status: 'running', lease: s.wall.now() + LEASE_MS })
    serve.start()
    try {
      // Time passes for both; the command renews its lease every third of it.
      for (let i = 0; i < 5; i++) {
        s.wall.advance(LEASE_MS / 3)
        await Bun.sleep(LEASE_MS / 3 + 10)
        expect(serve.adoptOrphans()).toBe(0)
      }
      expect(s.job('archive-1').status).toBe('running')
      expect(s.ran).toEqual([])
      release()
      await work
      expect(s.job('archive-1')).toEqual({ status: 'succeeded', lease: null })
    } finally {
      await serve.stop()
    }
  })

  it('are taken over by the server once the lease runs out (the command was killed), and finished by its handler', async () => {
    const s = setup()
    const serve = s.runner(s.wall.now)
    // The command's wall clock stops: it renews no more, as a killed process.
    const stopped = s.wall.now()
    const cli = s.runner(() => stopped)
    let release!: () => void
    const work = cli.runHere('restore', 'archive-2', () => new Promise<void>((r) => (release = r)))
    serve.start()
    try {
      expect(s.job('archive-2').status).toBe('running')
      s.wall.advance(LEASE_MS + 1)
      // The server's own pass (every third of the lease) queues it again and runs the handler.
      await until('the server ran the restore', () => s.ran.includes('archive-2'))
      await until('the job succeeded', () => s.job('archive-2').status === 'succeeded')
      expect(s.t.logged('taking over jobs whose process stopped')).toBe(true)
    } finally {
      await serve.stop()
      // The test's stand-in for the killed command ends, before the store closes.
      release()
      await work
    }
  })

  it('are taken over at the server\'s start when their lease ran out before it; its own jobs of a previous run always are', async () => {
    const s = setup()
    // A previous run of the server left a job running (no lease), and a killed command another.
    s.t.store.sqlite.run("INSERT INTO jobs (id, kind, subject_id, status, attempts, run_after, created_at, updated_at) VALUES ('j1', 'restore', 'own', 'running', 1, 0, 0, 0)")
    s.t.store.sqlite.run("INSERT INTO jobs (id, kind, subject_id, status, attempts, run_after, created_at, updated_at, lease_until) VALUES ('j2', 'restore', 'gone', 'running', 1, 0, 0, 0, ?)", [s.wall.now() - 1])
    s.t.store.sqlite.run("INSERT INTO jobs (id, kind, subject_id, status, attempts, run_after, created_at, updated_at, lease_until) VALUES ('j3', 'restore', 'alive', 'running', 1, 0, 0, 0, ?)", [s.wall.now() + 60_000])
    const serve = s.runner(s.wall.now)
    serve.start()
    try {
      await until('both orphans ran', () => s.ran.length === 2)
      expect(s.ran.sort()).toEqual(['gone', 'own'])
      expect(s.job('alive').status).toBe('running')
      expect(s.t.logged('resuming jobs interrupted by a stop')).toBe(true)
    } finally {
      await serve.stop()
    }
  })
})
