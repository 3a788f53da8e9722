/**
 * `bun run bench:files [--rounds 500]`: the files API (issue 4) on the compiled binary, with one
 * purchased static site on the real Docker engine.
 *
 * - write + read: POST files/write/ of a 4 KB text file, then GET files/read/ of it, timed
 *   together, `rounds` times; p50 and p95. Target: p50 under 10 ms.
 * - list: GET files/ of a folder of 1,000 files; p50 over 100 calls. Target: p50 under 50 ms.
 *
 * References measured in the same run, interleaved round by round so that load from neighbours
 * on the shared machine hits both alike:
 * - bench/files-reference.ts, a bare Bun.serve doing the same work with plain fs calls on a
 *   temporary folder (no auth, validation, resolver, chown or atomic rename); the ratio shows
 *   what Berth's layers cost;
 * - one `docker exec cat` of the same file through the engine API, the way a files API built on
 *   exec would read (20 runs); it shows why Berth works on the volume from the host instead.
 */
import Docker from 'dockerode'
import { spawn } from 'bun'
import { chownSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanup, cleanupOnExit, freePort, snapshotBinary, startBerth, tempDir, track, waitFor } from './processes'
import { buySite, instanceOf, removeSites } from './sites'
import { contention, processTicks, readCpuTimes } from './cpu-contention'
import { median } from './stats'

const TARGETS = { writeReadP50Ms: 10, listP50Ms: 50 }
const LIST_ENTRIES = 1000
const LIST_ROUNDS = 100
const EXEC_ROUNDS = 20
const docker = new Docker({ socketPath: '/var/run/docker.sock' })

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 500
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!
const text4k = () => Array.from({ length: 4096 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('')

async function main() {
  cleanupOnExit()
  snapshotBinary()
  const dataDir = tempDir('berth-bench-files-')
  const berth = await startBerth(dataDir)
  const refRoot = tempDir('berth-bench-files-ref-')
  const refPort = await freePort()
  const ref = track(spawn([process.execPath, join(import.meta.dir, 'files-reference.ts'), String(refPort), refRoot], { stdout: 'inherit', stderr: 'inherit' }))
  const refUrl = `http://127.0.0.1:${refPort}`
  try {
    const { slug, key } = await buySite(berth.url, 'bench-files')
    const home = await volumePath(dataDir, slug)
    await waitFor(async () => (await fetch(`${refUrl}/list?path=`)).status === 200, 10_000)
    const api = (method: string, path: string, body?: unknown) =>
      timed(`${berth.url}/api/v1/sites/${slug}/files/${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const bare = (method: string, path: string, body?: unknown) => timed(`${refUrl}/${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) })

    // A folder of 1,000 files on both sides (made directly on the volume: the listing is timed).
    await api('POST', 'mkdir/', { path: 'public/many' })
    for (let i = 0; i < LIST_ENTRIES; i++) {
      const name = `file-${String(i).padStart(4, '0')}.html`
      writeFileSync(join(home, 'public', 'many', name), `<p>${i}</p>`)
      chownSync(join(home, 'public', 'many', name), 1000, 1000)
      await Bun.write(join(refRoot, 'many', name), `<p>${i}</p>`)
    }
    const listed = await api('GET', '?path=public/many')
    if (listed.json.data.entries.length !== LIST_ENTRIES) throw new Error(`listing has ${listed.json.data.entries.length} entries`)

    const cpuBefore = readCpuTimes()
    const ticksBefore = ownTicks(berth.proc.pid, ref.pid)
    const writeRead = { berth: [] as number[], bare: [] as number[] }
    for (let i = 0; i < rounds + 20; i++) {
      const content = text4k()
      const b = (await api('POST', 'write/', { path: 'public/bench.txt', content })).ms + (await api('GET', 'read/?path=public/bench.txt')).ms
      const r = (await bare('POST', 'write', { path: 'bench.txt', content })).ms + (await bare('GET', 'read?path=bench.txt')).ms
      // The first 20 rounds warm both sides up (JIT, page cache) and are not counted.
      if (i >= 20) {
        writeRead.berth.push(b)
        writeRead.bare.push(r)
      }
    }
    const list = { berth: [] as number[], bare: [] as number[] }
    for (let i = 0; i < LIST_ROUNDS + 5; i++) {
      const b = (await api('GET', '?path=public/many')).ms
      const r = (await bare('GET', 'list?path=many')).ms
      if (i >= 5) {
        list.berth.push(b)
        list.bare.push(r)
      }
    }
    const busy = contention(cpuBefore, readCpuTimes(), ownTicks(berth.proc.pid, ref.pid) - ticksBefore)
    const exec: number[] = []
    for (let i = 0; i < EXEC_ROUNDS; i++) exec.push(await dockerExecCat(dataDir, slug))
    report(writeRead, list, exec, busy.otherPercent)
  } finally {
    await berth.stop()
    await removeSites(dataDir)
    cleanup()
  }
}

async function timed(url: string, init: RequestInit): Promise<{ ms: number; json: any }> {
  const started = performance.now()
  const res = await fetch(url, init)
  const json = await res.json()
  const ms = performance.now() - started
  if (res.status !== 200) throw new Error(`${init.method} ${url}: ${res.status} ${JSON.stringify(json)}`)
  return { ms, json }
}

const ownTicks = (...pids: number[]) => pids.reduce((sum, pid) => sum + processTicks(pid), 0) + processTicks(process.pid)

async function volumePath(dataDir: string, slug: string): Promise<string> {
  const [volume] = (await docker.listVolumes({ filters: { label: [`dev.berth.instance=${instanceOf(dataDir)}`, `dev.berth.site-slug=${slug}`] } })).Volumes ?? []
  if (!volume) throw new Error(`no volume for ${slug}`)
  return volume.Mountpoint
}

/** One `docker exec cat public/bench.txt` in the site's container, to its exit. */
async function dockerExecCat(dataDir: string, slug: string): Promise<number> {
  const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(dataDir)}`, `dev.berth.site-slug=${slug}`] } })
  const started = performance.now()
  const exec = await docker.getContainer(container!.Id).exec({ Cmd: ['cat', 'public/bench.txt'], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: true, AttachStderr: true })
  const stream = await exec.start({ hijack: true, stdin: false })
  stream.resume()
  await new Promise((done) => stream.on('end', done))
  return performance.now() - started
}

function report(writeRead: { berth: number[]; bare: number[] }, list: { berth: number[]; bare: number[] }, exec: number[], otherPercent: number) {
  const f = (ms: number) => `${ms.toFixed(2)} ms`
  const wr = { p50: percentile(writeRead.berth, 50), p95: percentile(writeRead.berth, 95) }
  const ls = percentile(list.berth, 50)
  console.log(`\nFiles API: 4 KB write + read (${writeRead.berth.length} rounds) and a 1,000-entry listing (${list.berth.length} calls)`)
  console.log(`  write+read  berth p50 ${f(wr.p50)}  p95 ${f(wr.p95)}   bare Bun.serve + fs p50 ${f(percentile(writeRead.bare, 50))}  p95 ${f(percentile(writeRead.bare, 95))}   ratio p50 ${(wr.p50 / percentile(writeRead.bare, 50)).toFixed(2)}x`)
  console.log(`  list 1,000  berth p50 ${f(ls)}  p95 ${f(percentile(list.berth, 95))}   bare p50 ${f(percentile(list.bare, 50))}   ratio p50 ${(ls / percentile(list.bare, 50)).toFixed(2)}x`)
  console.log(`  reference   one docker exec cat of the same file: median ${f(median(exec))} (${(median(exec) / wr.p50).toFixed(1)}x berth's whole write + read)`)
  console.log(`  machine     other processes used ${otherPercent.toFixed(0)}% of the CPU during the timed rounds (nproc ${navigator.hardwareConcurrency})`)
  console.log(`  write+read p50 < ${TARGETS.writeReadP50Ms} ms: ${wr.p50 < TARGETS.writeReadP50Ms ? 'PASS' : 'FAIL'}   list p50 < ${TARGETS.listP50Ms} ms: ${ls < TARGETS.listP50Ms ? 'PASS' : 'FAIL'}`)
  if (wr.p50 >= TARGETS.writeReadP50Ms || ls >= TARGETS.listP50Ms) process.exitCode = 1
}

await main()
