import Docker from 'dockerode'
import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY } from './helpers/binary'
import { ensureSystemdImage, execHost, runSystemdHost, SYSTEMD_IMAGE, TEST_LABEL, waitForBoot } from './helpers/systemd-host'
import { startLab, type Lab } from './lab/cluster-lab'
import { nodeNamespace } from './lab/lab-host'
import { AGENT_PORT, startControlPlane, type ControlPlane } from './lab/berth-cluster'

/**
 * `berth node join` as docs/cluster.md has the hoster run it, without --no-systemd: it writes
 * berth-node.service and starts it under a real systemd, which then keeps the agent running.
 * The box is node B of the two-node lab (test/lab): Debian 12's systemd in a container
 * (test/helpers/systemd-host.ts) booted in B's network namespace, with B's engine as its
 * /run/docker.sock, so the join's `docker swarm join` and the agent's iptables rules stay in the
 * lab and never touch the machine's engine or network. The control plane runs in node A with the
 * site firewall on (the agent keeps its rules inside the unit's sandbox).
 *
 * Checked: a join whose agent cannot start (its port taken) says so and exits 1, and systemd
 * keeps trying until it can; run from root's home, the join copies itself where the unit's sandbox
 * lets it run; the unit is installed, enabled and active (Type=notify: the join returns once the
 * agent listens); the node turns `active` (its agent answered the control plane); `systemctl
 * restart`, a SIGKILL of the agent (Restart=always), a stop long enough for the node to be `down`
 * then a start, and a reboot of the box each leave it answering again in bounded time. The first
 * run builds the systemd image (about two minutes); later runs take about 50 s.
 */
const LAB_NAME = process.env.BERTH_LAB_NAME ?? 'node-systemd'
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const runId = Math.random().toString(36).slice(2, 10)
const figures: Record<string, string> = {}

let lab: Lab
let control: ControlPlane
let host: Docker.Container
let nodeId = ''
let joinOutput = ''
let joinExit = -1
let journalAtJoin = ''
/** systemd's view of berth-node after the held port was freed: it had kept trying. */
let stateWhileHeld = ''

/** Runs a command as root on the node's box, in its network; fails the test when it exits non-zero. */
async function sh(script: string): Promise<string> {
  const res = await execHost(host, ['sh', '-c', script], { inNetwork: true })
  if (res.code !== 0) throw new Error(`${script}: exit ${res.code}\n${res.output}`)
  return res.output.trim()
}

const journal = () => sh('journalctl -u berth-node -o cat --no-pager')
const agentPid = async () => Number(await sh('systemctl show -p MainPID --value berth-node'))

/** The node's state in `berth nodes list --json` on the control plane. */
async function nodeState(): Promise<string | undefined> {
  const list = await control.cli(['nodes', 'list', '--json'])
  return (list.json as { id: string; state: string }[] | undefined)?.find((n) => n.id === nodeId)?.state
}

/** Polls `check` every 100 ms until it gives a value; the time it took in ms. Throws with the agent's journal after `timeoutMs`. */
async function within<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  for (;;) {
    const value = await check().catch(() => undefined)
    if (value !== undefined) return { value, ms: performance.now() - started }
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms\n${await journal().catch((e) => String(e))}`)
    await Bun.sleep(100)
  }
}

/** How often the control plane logged that the node's agent restarted (it asked the agent and found a new instance). */
const restartsSeen = () => control.berth.output().split('\n').filter((l) => l.includes('the agent of a node restarted') && l.includes(nodeId)).length

/**
 * After the agent was restarted (by systemctl or by Restart=): systemd runs a new process, active,
 * and the control plane got an answer from it (its restart logged, the node `active`). The time
 * from `since` to that answer, in ms.
 */
async function answersAgain(what: string, oldPid: number, restartsBefore: number, since: number): Promise<number> {
  await within(`${what}: berth-node active with a new process`, 15_000, async () => {
    const pid = await agentPid()
    return pid !== 0 && pid !== oldPid && (await sh('systemctl is-active berth-node')) === 'active' ? pid : undefined
  })
  await within(`${what}: the control plane got an answer from the new agent`, 15_000, async () => (restartsSeen() > restartsBefore && (await nodeState()) === 'active' ? true : undefined))
  return performance.now() - since
}

beforeAll(async () => {
  await ensureSystemdImage(docker, (line) => console.log(`${SYSTEMD_IMAGE}: ${line}`))
  lab = await startLab(LAB_NAME)
  control = await startControlPlane(lab, { firewall: true, images: [] })
  host = await runSystemdHost(docker, {
    name: `berth-node-systemd-e2e-${runId}`,
    runId,
    distDir: resolve(BINARY, '..'),
    netns: `/run/netns/${nodeNamespace(LAB_NAME, 'b')}`,
    dockerSocket: lab.dockerSocket('B'),
  })
  await waitForBoot(host)
  // Where a hoster downloads it: root's home, which the unit's ProtectHome= hides from the agent
  // (the unit ran that path: the agent never started, while the join said "installed and started").
  await sh('cp /opt/berth/berth /root/berth')
  // Something else holds the agent's port on the box's address when the join starts the service:
  // the agent cannot listen, and the join must say so (it said "installed and started").
  const holder = lab.spawn('B', ['python3', '-c', `import socket,time; s=socket.socket(); s.bind(('${lab.address('B')}', ${AGENT_PORT})); s.listen(); print('held', flush=True); time.sleep(600)`])
  await within('the port held', 10_000, async () => (holder.output().includes('held') ? true : undefined))
  const { token, url, fingerprint } = await control.joinCommand()
  const started = performance.now()
  const joined = await execHost(host, ['sh', '-c', `/root/berth node join ${url} --token ${token} --fingerprint ${fingerprint} --address ${lab.address('B')} --name box-b --docker-socket /run/docker.sock --json`], { inNetwork: true })
  joinExit = joined.code
  joinOutput = joined.output
  nodeId = /"node_id":\s*"(node_[^"]+)"/.exec(joinOutput)?.[1] ?? ''
  // Several of systemd's restarts (RestartSec=2s), then the port is freed: the agent comes up by
  // itself (Restart=always), with no one running anything on the box.
  await Bun.sleep(12_000)
  stateWhileHeld = await sh('systemctl is-active berth-node || true')
  const freed = performance.now()
  await holder.kill('SIGKILL')
  await within('berth-node active after the port was freed', 15_000, async () => ((await sh('systemctl is-active berth-node || true')) === 'active' ? true : undefined))
  // Type=notify: active means the agent listened.
  journalAtJoin = await journal()
  const active = await within('the node turned active', 20_000, async () => ((await nodeState()) === 'active' ? true : undefined))
  figures.join = `join command ${(freed - started - 12_000).toFixed(0)} ms; node active ${(performance.now() - freed).toFixed(0)} ms after the port was freed (${active.ms.toFixed(0)} ms after the unit was)`
}, 600_000)

afterAll(async () => {
  // The box first (it holds B's namespace and engine socket), then the control plane and the lab.
  for (const c of await docker.listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${runId}`] } })) {
    await docker.getContainer(c.Id).remove({ force: true }).catch(() => {})
  }
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  console.log(`node under systemd: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
}, 120_000)

describe('berth node join under a real systemd', () => {
  it('a join whose agent cannot start says so and exits 1; systemd keeps trying, and the agent comes up once it can', async () => {
    expect(joinExit, joinOutput).toBe(1)
    expect(nodeId).toMatch(/^node_/)
    expect(joinOutput).toContain('the node joined, but berth-node.service is in /etc/systemd/system/berth-node.service, but systemctl enable --now berth-node failed')
    expect(joinOutput).toContain('systemd tries again every 2 s: journalctl -u berth-node says why')
    // Why, in its journal: the port was taken.
    expect(await journal()).toContain(`Is port ${AGENT_PORT} in use?`)
    // Still trying while the port was held (StartLimitIntervalSec=0: systemd never gives up on it).
    expect(stateWhileHeld).toBe('activating')
  })

  it('installs berth-node.service, enabled and active, running the agent; the node turns active on the control plane', async () => {
    expect(await sh('systemctl is-enabled berth-node')).toBe('enabled')
    expect(await sh('systemctl is-active berth-node')).toBe('active')
    // The join copied itself where the unit can run it.
    expect(await sh('systemctl show -p ExecStart --value berth-node')).toContain('path=/usr/local/bin/berth ; argv[]=/usr/local/bin/berth node serve --data /var/lib/berth-node ;')
    expect(await sh('cmp /root/berth /usr/local/bin/berth && stat -c %a /usr/local/bin/berth')).toBe('755')
    expect((await sh('systemctl show -p Type -p Restart -p StatusText berth-node')).split('\n').sort()).toEqual(['Restart=always', `StatusText=serving node ${nodeId} on ${lab.address('B')}:${AGENT_PORT}`, 'Type=notify'])
    // The join returned once the agent listened (READY=1), not merely once systemd forked it.
    expect(journalAtJoin).toContain('"node agent listening"')
    const log = await journal()
    // The control plane's firewall policy reached the node and the agent set it, in the sandbox.
    await within('the site firewall set', 15_000, async () => ((await journal()).includes('installed the site firewall') ? true : undefined))
    expect(await journal()).not.toContain('the site firewall could not be set')
    expect(Number(await sh('iptables -S | grep -c "berth:" || true'))).toBeGreaterThan(0)
    expect(await nodeState()).toBe('active')
    expect(log).toContain(`"api":"${lab.address('B')}:${AGENT_PORT}"`)
  })

  it('systemctl restart berth-node: a new agent answers the control plane again', async () => {
    const [pid, before] = [await agentPid(), restartsSeen()]
    const since = performance.now()
    await sh('systemctl restart berth-node')
    const ms = await answersAgain('restart', pid, before, since)
    figures.restart = `answering ${ms.toFixed(0)} ms after systemctl restart`
    expect(ms).toBeLessThan(15_000)
  }, 60_000)

  it('a SIGKILL of the agent: systemd starts it again (Restart=always) and it answers again', async () => {
    const [pid, before] = [await agentPid(), restartsSeen()]
    const since = performance.now()
    await sh(`kill -KILL ${pid}`)
    const ms = await answersAgain('SIGKILL', pid, before, since)
    figures.kill = `answering ${ms.toFixed(0)} ms after SIGKILL (RestartSec=2s)`
    expect(ms).toBeLessThan(15_000)
    expect(await journal()).toContain('status=9/KILL')
  }, 60_000)

  it('systemctl stop: the node turns down; systemctl start: it is active again', async () => {
    await sh('systemctl stop berth-node')
    expect(await sh('systemctl is-active berth-node || true')).toBe('inactive')
    const down = await within('the node turned down', 20_000, async () => ((await nodeState()) === 'down' ? true : undefined))
    const since = performance.now()
    await sh('systemctl start berth-node')
    const up = await within('the node turned active again', 15_000, async () => ((await nodeState()) === 'active' ? true : undefined))
    figures.stopStart = `down ${down.ms.toFixed(0)} ms after stop; active ${(performance.now() - since).toFixed(0)} ms after start`
    expect(up.ms).toBeLessThan(15_000)
  }, 60_000)

  it('a reboot of the box: systemd starts the agent at boot (enabled) and the node is active again', async () => {
    const [since, before] = [performance.now(), restartsSeen()]
    // systemd shuts down (the agent gets SIGTERM) and boots again, in the same network namespace.
    await host.restart({ t: 30 })
    await waitForBoot(host)
    expect(await sh('systemctl is-active berth-node')).toBe('active')
    const up = await within('the node answered after the reboot', 20_000, async () => (restartsSeen() > before && (await nodeState()) === 'active' ? true : undefined))
    figures.reboot = `active ${(performance.now() - since).toFixed(0)} ms after the reboot began (${up.ms.toFixed(0)} ms after boot)`
    expect(await sh('journalctl -b -u berth-node -o cat --no-pager | grep -c "node agent listening"')).toBe('1')
  }, 90_000)
})
