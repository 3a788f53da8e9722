import { expect } from 'vitest'
import { api } from '../helpers/binary'
import { viaEdge } from '../helpers/purchase'
import { nodeOfSite, type ControlPlane } from './berth-cluster'
import { waitFor, type Lab, type LabNode } from './cluster-lab'

/**
 * What the admin-kill tests (test/admin-socket-kill*.e2e.test.ts) look at on their lab's one site:
 * where `berth nodes list` says it is, its running containers on each engine, its archives, a page
 * and 40 MB of ballast written to it, and whether it is served once, files intact. `lost` holds
 * the nodes the test powered off (their engine is gone: nothing runs there).
 */
export interface AdminKillKit {
  lost: Set<LabNode>
  nodeOf(slug: string): Promise<string | undefined>
  runningOn(): Promise<{ A: string[]; B: string[] }>
  backups(): Promise<Archive[]>
  ballast(stem: string): Promise<string>
  servedOnceFrom(node: string, token: string, withinMs: number, from: number): Promise<number>
}

export type Archive = { id: string; status: string; restored_at: string | null }

/** The ballast's size: 40 MB that does not compress, a restore long enough to be caught in the middle. */
export const BALLAST = 40_000_000

export const engineOf = (node: string): LabNode => (node === 'control' ? 'A' : 'B')

export function adminKillKit(lab: Lab, control: ControlPlane, site: { slug: string; key: string }): AdminKillKit {
  const lost = new Set<LabNode>()
  // The sha256 of the last ballast written: what the site must hold wherever it ends.
  let digest = ''
  const nodeOf = (slug: string) => nodeOfSite(control, slug)
  const runningOn = async () => {
    const ps = async (n: LabNode) => lost.has(n) ? [] : (await lab.docker(n, 'ps', '-q', '--filter', `label=dev.berth.site-slug=${site.slug}`, '--filter', 'status=running')).split('\n').filter(Boolean)
    return { A: await ps('A'), B: await ps('B') }
  }
  const sha256 = async (n: LabNode, container: string) => (await lab.docker(n, 'exec', container, 'sha256sum', '/home/site/ballast.bin')).split(' ')[0]!
  const backups = async () => (await api(control.url, 'GET', `/sites/${site.slug}/backups/`, { key: site.key })).json.data as Archive[]
  return {
    lost,
    nodeOf,
    runningOn,
    backups,
    /** Writes a page and the ballast; the page's token (the ballast's digest is kept). */
    async ballast(stem) {
      const token = `${stem}-${Date.now()}`
      const res = await api(control.url, 'POST', `/sites/${site.slug}/files/write/`, { key: site.key, body: { path: 'public/index.html', content: token } })
      expect(res.status, res.text).toBeLessThan(300)
      const n = engineOf((await nodeOf(site.slug))!)
      const [container] = (await runningOn())[n]
      await lab.docker(n, 'exec', '-u', '1000', container!, 'sh', '-c', `head -c ${BALLAST} /dev/urandom > /home/site/ballast.bin`)
      digest = await sha256(n, container!)
      return token
    },
    /** Served once from `node` with its page and its ballast (by digest): one running container, there; ms from `from`. */
    async servedOnceFrom(node, token, withinMs, from) {
      let last = ''
      await waitFor(`the site served from ${node} with its files`, withinMs, async () => {
        const res = await viaEdge(control.url, site.slug)
        const on = await nodeOf(site.slug)
        last = `${res.status} ${res.text.slice(0, 80)} on ${on}`
        return res.status === 200 && res.text === token && on === node
      }).catch((err) => {
        const said = control.berth.output().split('\n').filter((line) => line.includes(site.slug)).slice(-20).join('\n')
        throw new Error(`${(err as Error).message}; last: ${last}\nberth serve:\n${said}`)
      })
      const took = performance.now() - from
      const running = await runningOn()
      const here = engineOf(node)
      expect(running[here], JSON.stringify(running)).toHaveLength(1)
      expect(running[here === 'A' ? 'B' : 'A'], JSON.stringify(running)).toHaveLength(0)
      expect(await sha256(here, running[here][0]!)).toBe(digest)
      return took
    },
  }
}
