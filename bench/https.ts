/**
 * `bun run bench:https`: HTTPS through Berth's edge against nginx terminating TLS with the same
 * certificate in front of the same container, same run, same load tool (issue 12).
 *
 * 1. Pebble (Let's Encrypt's test CA) and `dist/berth serve` with HTTPS on, its DNS as Pebble's
 *    resolver; one site bought through a checkout; Berth obtains its certificate by HTTP-01.
 * 2. nginx (one worker, as Berth is one process) listens with TLS on that certificate and key
 *    (read from Berth's data folder) and proxies to the site's container over kept-alive HTTP/1.1,
 *    as Berth's edge does.
 * 3. wrk (-t2 -c64, 3 s warm-up + 10 s) with keep-alive, 3 interleaved rounds: the figure is the
 *    median of Berth's requests per second over nginx's; goal at least 0.8. Then new handshakes:
 *    wrk with `Connection: close`, every request a new TLS connection, reported for both.
 *
 * BARE=<script> adds a bare Bun TLS proxy as a third reference (e.g. a 3-line Bun.serve with
 * `tls` whose fetch calls fetch() to the container; argv: cert, key, upstream, port). HOLD=<s>
 * keeps everything up that long after set-up, printing the URLs and Berth's pid, for profilers,
 * then measures; Ctrl-C during the hold takes everything down without measuring.
 */
import { spawn, spawnSync } from 'bun'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../test/helpers/binary'
import { startTlsSite } from './tls-site'
import { cleanupOnExit, tempDir, track } from './processes'
import { median } from './stats'
import { nginxCommand, nginxProxyConf } from './nginx'
import { measure, warmUp, WRK_SETTINGS, wrkInstalled, type WrkResult, type WrkTarget } from './wrk'

const GOAL = 0.8
const ROUNDS = 3

if (!wrkInstalled()) throw new Error('wrk is not installed; install it with: apt-get install wrk nginx-light pebble')
cleanupOnExit()
const dir = tempDir('berth-bench-https-')
const nginxPort = await freePort()
const { berth, key, host, tlsPort, cert, certKey, upstream, dispose } = await startTlsSite(dir, 'httpsbench')
try {
  const nginx = startNginx(join(dir, 'nginx'), nginxPort, cert, certKey, upstream)
  const barePort = await freePort()
  const bare = process.env.BARE ? track(spawn(['bun', process.env.BARE, cert, certKey, upstream, String(barePort)], { stdout: 'ignore', stderr: 'inherit' })) : null
  try {
    await waitFor(`https://127.0.0.1:${nginxPort}/`, host)
    let interrupted = false
    if (process.env.HOLD) {
      // HOLD=1: keep everything up for manual measurement (profilers, strace) and print where.
      console.log(JSON.stringify({ host, nginx: `https://127.0.0.1:${nginxPort}/`, berth: `https://127.0.0.1:${tlsPort}/`, berthPid: berth.proc.pid, bare: bare ? `https://127.0.0.1:${barePort}/` : null }))
      // Ctrl-C ends the hold, skips the measurements and takes everything down (Pebble, nginx, the site).
      process.removeAllListeners('SIGINT')
      interrupted = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), Number(process.env.HOLD) * 1000)
        process.once('SIGINT', () => {
          clearTimeout(timer)
          resolve(true)
        })
      })
    }
    if (!interrupted) {
      const targets = (close: boolean): WrkTarget[] => {
        // Capitalised: wrk adds its own Host unless one named exactly 'Host' is given.
        const headers = { Host: host, ...(close ? { Connection: 'close' } : {}) }
        // The site's name in the URL, resolved to loopback, so that it is the TLS SNI too (Berth
        // refuses a handshake without a name it holds, issue 27).
        const resolve = { [host]: '127.0.0.1' }
        return [
          { name: `nginx${close ? ' new handshakes' : ''}`, url: `https://${host}:${nginxPort}/`, pid: nginx.pid, headers, resolve },
          { name: `berth${close ? ' new handshakes' : ''}`, url: `https://${host}:${tlsPort}/`, pid: berth.proc.pid, headers, resolve },
          ...(bare && !close ? [{ name: 'bare bun fetch proxy', url: `https://${host}:${barePort}/`, pid: bare.pid, headers, resolve }] : []),
          ...(process.env.PLAIN ? [
            // The site's name for SNI, Berth's own address as Host (so the API answers, not the site).
            { name: 'berth api https', url: `https://${host}:${tlsPort}/api/v1/auth/whoami/`, pid: berth.proc.pid, headers: { Host: `127.0.0.1:${tlsPort}`, Authorization: `Bearer ${key}` }, resolve },
            { name: 'berth api http', url: `${berth.url}/api/v1/auth/whoami/`, pid: berth.proc.pid, headers: { Authorization: `Bearer ${key}` } },
          ] : []),
        ]
      }
      console.log(`HTTPS: Berth's edge against nginx ${nginxVersion()} (1 worker), same certificate, same container; wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections}, ${WRK_SETTINGS.warmupSeconds} s warm-up + ${WRK_SETTINGS.durationSeconds} s, ${ROUNDS} rounds`)
      const results: Record<string, WrkResult[]> = {}
      for (const close of [false, true]) {
        for (let round = 1; round <= (close ? 1 : process.env.PLAIN ? 1 : ROUNDS); round++) {
          for (const target of targets(close)) {
            await warmUp(target)
            const r = await measure(target)
            if (r.non2xx > 0) throw new Error(`${target.name}: ${r.non2xx} answers outside 2xx; nginx's error log ends:\n${tail(join(dir, 'nginx', 'error.log'))}`)
            ;(results[target.name] ??= []).push(r)
            console.log(`  ${close ? '' : `round ${round}/${ROUNDS} `}${target.name.padEnd(22)} ${Math.round(r.requestsPerSec).toString().padStart(7)} req/s  CPU ${Math.round(r.serverCpuMicros).toString().padStart(4)} µs/request  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  socket errors ${r.socketErrors}`)
          }
        }
      }
      const rate = (name: string) => median(results[name]!.map((r) => r.requestsPerSec))
      const ratio = median(results.berth!.map((r, i) => r.requestsPerSec / results.nginx![i]!.requestsPerSec))
      console.log('\nFigure                              nginx     berth   berth/nginx   goal')
      console.log(`keep-alive req/s (median of ${ROUNDS})    ${Math.round(rate('nginx')).toString().padStart(7)}   ${Math.round(rate('berth')).toString().padStart(7)}   ${ratio.toFixed(2).padStart(11)}   ≥ ${GOAL}: ${ratio >= GOAL ? 'PASS' : 'FAIL'}`)
      const cpu = (name: string) => Math.round(median(results[name]!.map((r) => r.serverCpuMicros))).toString()
      console.log(`CPU µs per request (median)         ${cpu('nginx').padStart(7)}   ${cpu('berth').padStart(7)}                 (reported)`)
      const handshakes = rate('berth new handshakes') / rate('nginx new handshakes')
      console.log(`new handshakes per second           ${Math.round(rate('nginx new handshakes')).toString().padStart(7)}   ${Math.round(rate('berth new handshakes')).toString().padStart(7)}   ${handshakes.toFixed(2).padStart(11)}   (reported)`)
      if (ratio < GOAL) process.exitCode = 1
    }
  } finally {
    for (const proc of [nginx, bare]) proc?.kill()
    await Promise.all([nginx.exited, bare?.exited])
  }
} finally {
  await dispose()
}

function startNginx(root: string, listenPort: number, cert: string, key: string, upstream: string) {
  spawnSync(['mkdir', '-p', root])
  // One worker, as Berth is one process; the same certificate and key as Berth's.
  writeFileSync(join(root, 'nginx.conf'), nginxProxyConf({ root, workers: 1, port: listenPort, upstream, tls: { cert, key } }))
  return track(spawn(nginxCommand(root), { stdout: 'ignore', stderr: 'inherit' }))
}

async function waitFor(url: string, host: string) {
  for (let i = 0; i < 100; i++) {
    const p = spawnSync(['curl', '-sk', '-o', '/dev/null', '-w', '%{http_code}', '-H', `host: ${host}`, url])
    if (p.stdout.toString() === '200') return
    await Bun.sleep(100)
  }
  throw new Error(`${url} does not answer 200`)
}

function nginxVersion(): string {
  return /nginx\/([\d.]+)/.exec(spawnSync([nginxCommand('')[0]!, '-v']).stderr.toString())?.[1] ?? ''
}


function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-5).join('\n')
  } catch {
    return '(none)'
  }
}
