import { spawnSync } from 'bun'
import type Docker from 'dockerode'
import type { Berth } from './binary'
import { siteShell } from './sites'

/**
 * What the site firewall's end-to-end tests share (site-firewall.solo.e2e, systemd-unit.solo.e2e): a subnet
 * pool of the test's own, so that its rules (which match the pool alone) touch no other suite's
 * sites on the shared machine, and a probe from inside a site's container.
 */

/** `iptables -S` (the filter table) of this machine, every line tagged with `pool`'s comment. */
export function rulesOfPool(pool: string): string[] {
  const p = spawnSync(['iptables', '-S'], { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`iptables -S: ${p.stderr.toString()}`)
  return p.stdout.toString().split('\n').filter((l) => l.includes(`berth:${pool}:`))
}

/** A /24 pool under 10.250.0.0/16 that no network on the engine and no route on the host overlaps. */
export async function freePool(docker: Docker): Promise<string> {
  const used = (await docker.listNetworks()).flatMap((n) => (n.IPAM?.Config ?? []).map((c) => c.Subnet ?? ''))
  const routes = spawnSync(['ip', '-4', 'route'], { stdout: 'pipe' }).stdout.toString().split('\n').map((l) => l.split(' ')[0] ?? '')
  for (;;) {
    const candidate = `10.250.${Math.floor(Math.random() * 256)}.`
    if (![...used, ...routes].some((cidr) => cidr.startsWith(candidate))) return `${candidate}0/24`
  }
}

/**
 * From inside the site's container, as its user: an HTTP request to `address:port`, with busybox nc
 * where the image has it (static sites; its input stays open a second, as Bun's server drops a
 * connection whose client half-closed it before the answer), else with bash's /dev/tcp (the PHP
 * image, which has no nc). The answer, or the error: a rule of the site firewall rejects with ICMP
 * administratively prohibited, which both report as "No route to host" (REFUSED_BY_FIREWALL).
 * `berth` is a Berth the test started, or the instance id of one it did not.
 */
export async function probeFromSite(berth: Berth | string, slug: string, address: string, port: number, host = 'probe'): Promise<string> {
  const request = `printf 'GET / HTTP/1.0\\r\\nHost: ${host}\\r\\n\\r\\n'`
  const script = [
    `if command -v nc >/dev/null; then (${request}; sleep 1) | nc -w 4 ${address} ${port} 2>&1`,
    `else timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${port} && ${request.replaceAll("'", "\"")} >&3 && cat <&3' 2>&1; fi; true`,
  ].join('; ')
  for (let attempt = 0; ; attempt++) {
    try {
      return (await siteShell(berth, slug, script)).output
    } catch (err) {
      // The first automatic backup pauses the container a moment (a consistent copy).
      if (!/paused/.test((err as Error).message) || attempt > 40) throw err
      await Bun.sleep(250)
    }
  }
}

/** What probeFromSite prints when the site firewall refused the connection. */
export const REFUSED_BY_FIREWALL = /(can't connect to remote host .*|connect: )No route to host/

/**
 * What probeFromSite (or nc, or bash's /dev/tcp) prints when the site firewall refused outbound
 * SMTP: a TCP reset, "Connection refused" (a dropped packet would time out instead).
 */
export const REFUSED_SMTP = /(can't connect to remote host .*|connect: )Connection refused/

/** What probeFromSite prints when a server answered. */
export const ANSWERED = /^HTTP\/1\.[01] \d{3}/
