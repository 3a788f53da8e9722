/**
 * `bun run bench:restarts`: requests lost across restarts of Berth, and the longest pause a client
 * saw, under Debian 12's real systemd (the container of test/systemd-unit.solo.e2e.test.ts, built on
 * first use: about two minutes), with the units `berth install` writes.
 *
 * Clients (test/helpers/request-loop.ts) send one request after another, as fast as answered:
 * `GET /api/v1/status/` over HTTP on kept-alive connections, another on a new connection each
 * time, and SOA queries to Berth's DNS over UDP and over TCP (each paced at 50 a second, under
 * its rate limit).
 * Meanwhile RESTARTS times `systemctl restart berth`, then one `berth upgrade` (the binary
 * replaced). Two ways, in the same run:
 *
 * - reference: no berth.socket, Berth binding its own listeners as before issue 27 (the
 *   port is closed between the old process's exit and the new one's listen);
 * - berth.socket: systemd holds the sockets, Berth hands them over (drivers/systemd/sockets.ts).
 *
 * Goal: 0 requests lost with berth.socket. The longest pause is the longest any one request took.
 */
import Docker from 'dockerode'
import { resolve } from 'node:path'
import { BINARY, freePort } from '../test/helpers/binary'
import { describeLoops, dnsLoop, dnsTcpLoop, httpLoop, type LoopResult } from '../test/helpers/request-loop'
import { ensureSystemdImage, execHost, runSystemdHost, TEST_LABEL, waitForBoot } from '../test/helpers/systemd-host'

const RESTARTS = Number(process.env.RESTARTS ?? 10)
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const runId = Math.random().toString(36).slice(2, 10)

await ensureSystemdImage(docker, (line) => console.log(line))
const host = await runSystemdHost(docker, { name: `berth-bench-restarts-${runId}`, runId, distDir: resolve(BINARY, '..') })
const remove = () => host.remove({ force: true }).catch(() => {})
process.on('SIGINT', () => void remove().then(() => process.exit(130)))

async function sh(script: string): Promise<string> {
  const res = await execHost(host, ['sh', '-c', script])
  if (res.code !== 0) throw new Error(`${script}: exit ${res.code}\n${res.output}`)
  return res.output.trim()
}

/** RESTARTS restarts and one upgrade under the clients; their tallies. */
async function restartsUnderLoad(port: number, dnsPort: number): Promise<LoopResult[]> {
  const api = `http://127.0.0.1:${port}/api/v1/status/`
  const loops = [
    httpLoop('API, kept-alive connections', api, '"data"'),
    httpLoop('API, a new connection each', api, '"data"', { headers: { connection: 'close' } }),
    dnsLoop('DNS over UDP', { host: '127.0.0.1', port: dnsPort }, 'localhost'),
    dnsTcpLoop('DNS over TCP', { host: '127.0.0.1', port: dnsPort }, 'localhost'),
  ]
  let failed: unknown = null
  try {
    for (let i = 0; i < RESTARTS; i++) {
      await Bun.sleep(500)
      await sh('systemctl restart berth')
    }
    await Bun.sleep(500)
    await sh('berth upgrade /opt/berth/berth')
    await Bun.sleep(500)
  } catch (err) {
    failed = err
  }
  const results = await Promise.all(loops.map((l) => l.stop()))
  if (failed) throw failed
  return results
}

try {
  await waitForBoot(host)
  const [port, dnsPort] = [await freePort(), await freePort()]
  await sh('BERTH_CONTAINERS_FIREWALL=false /opt/berth/berth install >/dev/null')
  await sh([
    'sed -i',
    `-e 's|^# listen = "0.0.0.0:8080"|listen = "127.0.0.1:${port}"|'`,
    `-e 's|^listen = "0.0.0.0:53"|listen = "127.0.0.1:${dnsPort}"|'`,
    `-e 's|^listen = "0.0.0.0:443"|listen = "off"|'`,
    `-e 's|^# firewall = true|firewall = false|'`,
    '/etc/berth/berth.toml',
  ].join(' '))
  // Again, so that berth.socket holds the edited addresses; it also restarts no more than 10 times a minute.
  await sh('berth install >/dev/null && mkdir -p /etc/systemd/system/berth.service.d && printf "[Unit]\\nStartLimitBurst=1000\\n" > /etc/systemd/system/berth.service.d/bench.conf && systemctl daemon-reload')

  // The reference: no socket held by systemd (berth.socket removed; Wants= on a missing unit is a no-op).
  await sh('rm /etc/systemd/system/berth.socket && systemctl daemon-reload && systemctl start berth')
  if ((await sh('journalctl -u berth -o cat')).includes('systemd holds')) throw new Error('the reference was given sockets')
  const reference = await restartsUnderLoad(port, dnsPort)
  // berth install writes berth.socket again.
  await sh('systemctl stop berth && berth install >/dev/null && systemctl start berth')
  if ((await sh('systemctl is-active berth.socket')) !== 'active') throw new Error('berth.socket did not start')
  const held = await restartsUnderLoad(port, dnsPort)

  const lost = (rs: LoopResult[]) => rs.reduce((n, r) => n + r.failed, 0)
  const sent = (rs: LoopResult[]) => rs.reduce((n, r) => n + r.sent, 0)
  const longest = (rs: LoopResult[]) => Math.max(...rs.map((r) => r.longestMs))
  console.log(`\n${RESTARTS} x systemctl restart berth + 1 x berth upgrade, under four clients\n`)
  console.log(`reference (no berth.socket, as before):\n${describeLoops(reference)}\n`)
  console.log(`berth.socket (systemd holds the sockets):\n${describeLoops(held)}\n`)
  console.log(`| | requests | lost | longest pause |\n|---|---|---|---|`)
  console.log(`| reference (no berth.socket) | ${sent(reference)} | ${lost(reference)} | ${longest(reference)} ms |`)
  console.log(`| berth.socket | ${sent(held)} | ${lost(held)} | ${longest(held)} ms |`)
  const pass = lost(held) === 0
  console.log(`\n${pass ? 'PASS' : 'FAIL'} requests lost with berth.socket: ${lost(held)} (goal 0)`)
  process.exitCode = pass ? 0 : 1
} finally {
  await remove()
  for (const c of await docker.listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${runId}`] } })) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {})
}
