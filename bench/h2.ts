/**
 * `bun run bench:h2`: HTTP/2 through Berth's HTTPS edge against nginx with HTTP/2 on, the same
 * certificate and the same container upstream, same run, same load tool (issue 27).
 *
 * 1. Pebble and `dist/berth serve` with HTTPS on (as bench/https.ts); one site on the dedicated
 *    plan (berth/php:1, kept-alive upstream connections, 2 cores); Berth obtains its certificate.
 * 2. nginx (one worker, as Berth is one process) with `listen ... ssl http2` on that certificate
 *    and key, proxying to the site's container over kept-alive HTTP/1.1, as Berth's edge does.
 * 3. h2load (nghttp2-client: -c16 clients, -m4 streams each, 2 threads, a 3 s run thrown away
 *    then 10 s), 3 interleaved rounds: the figure is the median of Berth's requests per second
 *    over nginx's; goal at least 0.8. Every request must succeed (no failed or errored stream),
 *    else it stops. Each server's CPU time per request (its process and children, so nginx's
 *    worker counts) is printed too: steadier than requests per second on a shared VM.
 *
 * HOLD=<s> keeps everything up that long after set-up (URLs and Berth's pid printed), for profilers.
 */
import { spawn, spawnSync } from 'bun'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../test/helpers/binary'
import { startTlsSite } from './tls-site'
import { cleanupOnExit, tempDir, track } from './processes'
import { median } from './stats'
import { ticksToMicros, treeTicks } from './cpu-contention'
import { nginxCommand, nginxProxyConf } from './nginx'

const GOAL = 0.8
const ROUNDS = 3
const H2LOAD = { clients: 16, streams: 4, threads: 2, warmupSeconds: 3, durationSeconds: 10 }

if (!Bun.which('h2load')) throw new Error('h2load is not installed; install it with: apt-get install nghttp2-client nginx-light pebble')
cleanupOnExit()
const dir = tempDir('berth-bench-h2-')
const nginxPort = await freePort()
const { berth, host, tlsPort, cert, certKey, upstream, dispose } = await startTlsSite(dir, 'h2bench')
try {
  const root = join(dir, 'nginx')
  spawnSync(['mkdir', '-p', root])
  writeFileSync(join(root, 'nginx.conf'), nginxProxyConf({ root, workers: 1, port: nginxPort, upstream, tls: { cert, key: certKey, http2: true } }))
  const nginx = track(spawn(nginxCommand(root), { stdout: 'ignore', stderr: 'inherit' }))
  try {
    const targets = [
      { name: 'nginx', port: nginxPort },
      { name: 'berth', port: tlsPort },
    ]
    for (const t of targets) await answers(t.port, host)
    if (process.env.HOLD) {
      console.log(JSON.stringify({ host, nginx: `https://127.0.0.1:${nginxPort}/`, berth: `https://127.0.0.1:${tlsPort}/`, berthPid: berth.proc.pid }))
      await Bun.sleep(Number(process.env.HOLD) * 1000)
    }
    const h = H2LOAD
    console.log(`HTTP/2: Berth's HTTPS edge against nginx ${nginxVersion()} (1 worker, listen ssl http2), same certificate, same container; h2load -c${h.clients} -m${h.streams} -t${h.threads}, ${h.warmupSeconds} s warm-up + ${h.durationSeconds} s, ${ROUNDS} rounds`)
    const results: Record<string, H2loadResult[]> = {}
    for (let round = 1; round <= ROUNDS; round++) {
      for (const t of targets) {
        h2load(t.port, host, h.warmupSeconds)
        const pid = t.name === 'nginx' ? nginx.pid : berth.proc.pid
        const cpuBefore = treeTicks(pid)
        const r = h2load(t.port, host, h.durationSeconds)
        r.cpuMicros = ticksToMicros(treeTicks(pid) - cpuBefore) / r.succeeded
        ;(results[t.name] ??= []).push(r)
        console.log(`  round ${round}/${ROUNDS} ${t.name.padEnd(6)} ${Math.round(r.requestsPerSec).toString().padStart(7)} req/s  ${r.succeeded} succeeded  ${r.failed} failed  mean request ${r.meanMs.toFixed(2)} ms  CPU ${Math.round(r.cpuMicros).toString().padStart(4)} µs/request  (${r.protocol}, ${r.cipher})`)
      }
    }
    const rate = (name: string) => median(results[name]!.map((r) => r.requestsPerSec))
    const ratio = median(results.berth!.map((r, i) => r.requestsPerSec / results.nginx![i]!.requestsPerSec))
    console.log('\nFigure                              nginx     berth   berth/nginx   goal')
    console.log(`h2 req/s (median of ${ROUNDS})           ${Math.round(rate('nginx')).toString().padStart(7)}   ${Math.round(rate('berth')).toString().padStart(7)}   ${ratio.toFixed(2).padStart(11)}   ≥ ${GOAL}: ${ratio >= GOAL ? 'PASS' : 'FAIL'}`)
    const cpu = (name: string) => Math.round(median(results[name]!.map((r) => r.cpuMicros))).toString()
    console.log(`CPU µs per request (median)         ${cpu('nginx').padStart(7)}   ${cpu('berth').padStart(7)}                 (reported)`)
    if (ratio < GOAL) process.exitCode = 1
  } finally {
    nginx.kill()
    await nginx.exited
  }
} finally {
  await dispose()
}

interface H2loadResult { requestsPerSec: number; succeeded: number; failed: number; meanMs: number; protocol: string; cipher: string; cpuMicros: number }

/** One h2load run of `seconds` against `port` with the site's name (SNI and :authority); throws on any failed stream. */
function h2load(port: number, host: string, seconds: number): H2loadResult {
  const h = H2LOAD
  const p = spawnSync(['h2load', '-c', String(h.clients), '-m', String(h.streams), '-t', String(h.threads), '-D', String(seconds), `--connect-to=127.0.0.1:${port}`, `https://${host}/`])
  const out = p.stdout.toString()
  const counts = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out)
  const rps = /finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(out)
  if (p.exitCode !== 0 || !counts || !rps) throw new Error(`h2load to port ${port} failed:\n${out}\n${p.stderr.toString()}`)
  const [failed, errored, timedOut] = [Number(counts[5]), Number(counts[6]), Number(counts[7])]
  if (failed + errored + timedOut > 0) throw new Error(`h2load to port ${port}: ${failed} failed, ${errored} errored, ${timedOut} timed out\n${out}`)
  const mean = /time for request:\s+\S+\s+\S+\s+(\S+)/.exec(out)?.[1] ?? '0'
  return {
    requestsPerSec: Number(rps[1]),
    succeeded: Number(counts[4]),
    failed,
    meanMs: mean.endsWith('us') ? parseFloat(mean) / 1000 : mean.endsWith('ms') ? parseFloat(mean) : parseFloat(mean) * 1000,
    protocol: /Application protocol: (\S+)/.exec(out)?.[1] ?? '?',
    cipher: /Cipher: (\S+)/.exec(out)?.[1] ?? '?',
    cpuMicros: NaN,
  }
}

/** Waits until `port` answers the site's page over h2. */
async function answers(port: number, host: string) {
  for (let i = 0; i < 100; i++) {
    const p = spawnSync(['curl', '-sk', '--http2', '-o', '/dev/null', '-w', '%{http_code} %{http_version}', '--resolve', `${host}:${port}:127.0.0.1`, `https://${host}:${port}/`])
    if (p.stdout.toString() === '200 2') return
    await Bun.sleep(100)
  }
  throw new Error(`port ${port} does not answer 200 over h2`)
}

function nginxVersion(): string {
  return /nginx\/([\d.]+)/.exec(spawnSync([nginxCommand('')[0]!, '-v']).stderr.toString())?.[1] ?? ''
}
