import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * The host side of the two-node lab (cluster-lab.ts): what a lab owns on the machine, found by its
 * name alone, so that a lab's stop and the next run's sweep remove the same things, even when the
 * run that made them was killed:
 *
 * - network namespaces `berthlab-{name}-a` and `-b` (/run/netns);
 * - host links `bl{n}a`, `bl{n}b` (veths to the namespaces) whose alias is `berthlab-{name}`
 *   (IFNAMSIZ is 16, too short for the name; the alias has room);
 * - a pids cgroup per node, `berthlab-{name}-a`: every process the node runs (dockerd, containerd,
 *   shims, the containers through dockerd's --cgroup-parent, and everything lab.exec/spawn starts)
 *   is in it, so killing what is in it kills the node whatever forked or was re-parented; dockerd
 *   makes the containers' cgroups under the same name in the other hierarchies;
 * - a temporary folder `{tmpdir}/berthlab-{name}` (the engines' data roots, sockets, logs; lab.json
 *   names the owner process, so a lab whose owner died is swept by any later lab's start).
 * No mount of a lab shows on the host: each node's processes run in a private mount namespace
 * (in-node.sh); the only host mounts are the namespaces' own under /run/netns, which `ip netns del`
 * removes.
 */

export const PREFIX = 'berthlab-'
export type NodeLetter = 'a' | 'b'
export const NODE_LETTERS: NodeLetter[] = ['a', 'b']

const CGROUP_ROOT = '/sys/fs/cgroup'
/** The hierarchy the lab puts its processes in: pids on cgroup v1 (this machine), the unified tree on v2. */
const PIDS_HIERARCHY = existsSync(join(CGROUP_ROOT, 'pids', 'cgroup.procs')) ? join(CGROUP_ROOT, 'pids') : CGROUP_ROOT

/** The lab's temporary folder. */
export function labRoot(name: string): string {
  return join(tmpdir(), `${PREFIX}${name}`)
}

/** A node's network namespace, also the name of its cgroups. */
export function nodeNamespace(name: string, node: NodeLetter): string {
  return `${PREFIX}${name}-${node}`
}

/** The alias of the lab's host links. */
export function linkAlias(name: string): string {
  return `${PREFIX}${name}`
}

/** The pids cgroup folder of a node, or of one of its parts (engine: the daemons; sites: the containers; procs: lab.exec/spawn). */
export function nodeCgroup(name: string, node: NodeLetter, part?: 'engine' | 'sites' | 'procs' | 'mounts'): string {
  return join(PIDS_HIERARCHY, nodeNamespace(name, node), ...(part ? [part] : []))
}

/** The `--cgroup-parent` of a node's dockerd: its containers' cgroups, in every hierarchy. */
export function sitesCgroupParent(name: string, node: NodeLetter): string {
  return `/${nodeNamespace(name, node)}/sites`
}

export interface ShResult {
  status: number
  stdout: string
  stderr: string
}

/** Runs a command on the host and waits; throws with its output when it fails, unless `allowFailure`. */
export function sh(argv: string[], opts: { allowFailure?: boolean; input?: string } = {}): ShResult {
  const res = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', input: opts.input })
  const result = { status: res.status ?? -1, stdout: res.stdout ?? '', stderr: res.stderr ?? '' }
  if (result.status !== 0 && !opts.allowFailure) {
    throw new Error(`${argv.join(' ')} exited with ${result.status}: ${result.stderr || result.stdout}`)
  }
  return result
}

/** The index `n` of a lab's address ranges: taken by creating host link `bl{n}a` (which fails when another lab has it). */
function claimIndex(name: string): number {
  const start = [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % 256
  for (let k = 0; k < 256; k++) {
    const n = (start + k) % 256
    const made = sh(['ip', 'link', 'add', `bl${n}a`, 'type', 'veth', 'peer', 'name', 'host', 'netns', nodeNamespace(name, 'a')], { allowFailure: true })
    if (made.status === 0) return n
  }
  throw new Error('no free lab index: 256 labs run at once?')
}

/**
 * Makes a lab's namespaces, links, addresses and routes (the layout in cluster-lab.ts); returns
 * its index n (10.251.n.0/24 between the nodes, 10.252.n.0/29 to the host).
 */
export function makeNetwork(name: string): number {
  for (const node of NODE_LETTERS) {
    sh(['ip', 'netns', 'add', nodeNamespace(name, node)])
    sh(['ip', '-n', nodeNamespace(name, node), 'link', 'set', 'lo', 'up'])
  }
  const [nsA, nsB] = [nodeNamespace(name, 'a'), nodeNamespace(name, 'b')]
  const n = claimIndex(name)
  sh(['ip', 'link', 'set', `bl${n}a`, 'alias', linkAlias(name)])
  sh(['ip', 'link', 'add', `bl${n}b`, 'type', 'veth', 'peer', 'name', 'host', 'netns', nsB])
  sh(['ip', 'link', 'set', `bl${n}b`, 'alias', linkAlias(name)])
  sh(['ip', '-n', nsA, 'link', 'add', 'lab', 'type', 'veth', 'peer', 'name', 'lab', 'netns', nsB])
  for (const [ns, hostLink, base] of [[nsA, `bl${n}a`, 0], [nsB, `bl${n}b`, 4]] as const) {
    sh(['ip', 'addr', 'add', `10.252.${n}.${base + 1}/30`, 'dev', hostLink])
    sh(['ip', 'link', 'set', hostLink, 'up'])
    sh(['ip', '-n', ns, 'addr', 'add', `10.252.${n}.${base + 2}/30`, 'dev', 'host'])
    sh(['ip', '-n', ns, 'link', 'set', 'host', 'up'])
    sh(['ip', '-n', ns, 'addr', 'add', `10.251.${n}.${ns === nsA ? 1 : 2}/24`, 'dev', 'lab'])
    sh(['ip', '-n', ns, 'link', 'set', 'lab', 'up'])
    sh(['ip', 'route', 'add', `10.251.${n}.${ns === nsA ? 1 : 2}/32`, 'via', `10.252.${n}.${base + 2}`])
  }
  return n
}

/** Every pid in a cgroup folder and its descendants. */
export function pidsIn(cgroupDir: string): number[] {
  if (!existsSync(cgroupDir)) return []
  const pids: number[] = []
  const walk = (dir: string) => {
    try {
      pids.push(...readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number))
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name))
    } catch {
      // removed meanwhile
    }
  }
  walk(cgroupDir)
  return pids
}

/**
 * SIGKILLs every process in a cgroup folder and its descendants until none is left (a process may
 * fork between the read and the kill: a few rounds). Throws if some still live after 10 s.
 */
export function killCgroup(cgroupDir: string): void {
  const deadline = Date.now() + 10_000
  for (let pids = pidsIn(cgroupDir); pids.length > 0; pids = pidsIn(cgroupDir)) {
    if (Date.now() > deadline) throw new Error(`processes ${pids.join(' ')} in ${cgroupDir} outlived SIGKILL for 10 s`)
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
    Bun.sleepSync(20)
  }
}

/** Removes a node's cgroup folders in every hierarchy (deepest first; a killed cgroup empties in a moment). */
function removeCgroups(name: string, node: NodeLetter): void {
  const hierarchies = readdirSync(CGROUP_ROOT).map((h) => join(CGROUP_ROOT, h))
  for (const top of [CGROUP_ROOT, ...hierarchies].map((h) => join(h, nodeNamespace(name, node))).filter((dir) => existsSync(dir))) {
    const dirs: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name))
      dirs.push(dir)
    }
    walk(top)
    for (const dir of dirs) {
      for (let attempt = 0; ; attempt++) {
        try {
          rmdirCgroup(dir)
          break
        } catch (err) {
          if (attempt >= 50) throw err
          Bun.sleepSync(20)
        }
      }
    }
  }
}

/** rmdir(2) of a cgroup folder (its control files are not files fs.rm could remove one by one). */
function rmdirCgroup(dir: string): void {
  sh(['rmdir', dir])
}

/** The host links of a lab (found by their alias). */
export function labLinks(name: string): string[] {
  const links = JSON.parse(sh(['ip', '-j', 'link', 'show']).stdout || '[]') as { ifname: string; ifalias?: string }[]
  return links.filter((l) => l.ifalias === linkAlias(name)).map((l) => l.ifname)
}

/** The lab's namespaces that exist. */
function labNamespaces(name: string): string[] {
  const existing = existsSync('/run/netns') ? readdirSync('/run/netns') : []
  return NODE_LETTERS.map((node) => nodeNamespace(name, node)).filter((ns) => existing.includes(ns))
}

/** dockerd processes whose pidfile is under the lab's folder (in case one escaped its cgroup). */
function labDockerds(name: string): number[] {
  return NODE_LETTERS.flatMap((node) => {
    try {
      const pid = Number(readFileSync(join(labRoot(name), node, 'dockerd.pid'), 'utf8').trim())
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      return argv.some((arg) => arg.endsWith('dockerd')) && argv.some((arg) => arg.startsWith(labRoot(name))) ? [pid] : []
    } catch {
      return []
    }
  })
}

/** Host mounts that belong to the lab (none but the namespaces' while it runs). */
function labMounts(name: string): string[] {
  const mine = [`/${PREFIX}${name}/`, ...NODE_LETTERS.map((node) => `/run/netns/${nodeNamespace(name, node)}`)]
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mine.some((m) => mountPoint.includes(m) || `${mountPoint}/`.includes(m)))
}

/**
 * Removes everything of the lab `name`: its processes (cgroup kill, then any dockerd of its
 * pidfiles), namespaces, links, mounts, cgroups and folder. Idempotent; quick when nothing is left.
 */
export function sweepLab(name: string): void {
  for (const node of NODE_LETTERS) killCgroup(nodeCgroup(name, node))
  for (const pid of labDockerds(name)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
  for (const node of NODE_LETTERS) removeCgroups(name, node)
  for (const ns of labNamespaces(name)) sh(['ip', 'netns', 'del', ns], { allowFailure: true })
  for (const link of labLinks(name)) sh(['ip', 'link', 'del', link], { allowFailure: true })
  for (const mountPoint of labMounts(name).reverse()) sh(['umount', '-l', mountPoint], { allowFailure: true })
  // The folders beneath the sites' disks are immutable (drivers/runtime/disk-script.ts); the
  // disks went with the nodes' mount namespaces.
  sh(['sh', '-c', 'for d in "$0"/*/data/volumes/*/_data; do [ -d "$d" ] && chattr -i "$d"; done; true', labRoot(name)], { allowFailure: true })
  // A process of the lab that was still ending (under load) may write a file or two after the
  // removal: removed again once it had a moment.
  for (let i = 0; i < 5 && existsSync(labRoot(name)); i++) {
    if (i > 0) Bun.sleepSync(200)
    rmSync(labRoot(name), { recursive: true, force: true })
  }
}

/** Up to 20 paths under `dir`, to say what was left there. */
function listed(dir: string): string {
  try {
    return (readdirSync(dir, { recursive: true }) as string[]).slice(0, 20).join(', ') || 'nothing'
  } catch (err) {
    return (err as Error).message
  }
}

/** What of the lab `name` is left on the host, one line each; empty when nothing. */
export function leftovers(name: string): string[] {
  const processes = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).flatMap((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      return cmdline.includes(labRoot(name)) ? [`process ${pid}: ${cmdline.replaceAll('\0', ' ').trim()}`] : []
    } catch {
      return []
    }
  })
  const cgroups = readdirSync(CGROUP_ROOT).flatMap((h) => NODE_LETTERS.map((node) => join(CGROUP_ROOT, h, nodeNamespace(name, node)))).filter((dir) => existsSync(dir))
  return [
    ...labNamespaces(name).map((ns) => `network namespace ${ns}`),
    ...labLinks(name).map((link) => `link ${link}`),
    ...processes,
    ...NODE_LETTERS.flatMap((node) => pidsIn(nodeCgroup(name, node)).map((pid) => `process ${pid} in cgroup ${nodeNamespace(name, node)}`)),
    ...cgroups.map((dir) => `cgroup ${dir}`),
    ...labMounts(name).map((m) => `mount ${m}`),
    ...(existsSync(labRoot(name)) ? [`folder ${labRoot(name)} holding ${listed(labRoot(name))}`] : []),
  ]
}

/** The owner of a lab, as its lab.json records it: a pid and that process's start time (pids are reused). */
export interface LabOwner {
  pid: number
  startTime: string
}

/** This process, as a lab's owner. */
export function currentOwner(): LabOwner {
  return { pid: process.pid, startTime: startTimeOf(process.pid) ?? '' }
}

/**
 * Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot; undefined when
 * it is gone or a zombie (this machine's pid 1 reaps none: a killed run's process can stay a zombie).
 */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[0] === 'Z' ? undefined : fields[19]
  } catch {
    return undefined
  }
}

/** The live process (not this one) that owns the lab `name`, if any. */
export function otherLiveOwner(name: string): LabOwner | undefined {
  const owner = ownerOf(join(labRoot(name), 'lab.json'))
  return owner && owner.pid !== process.pid && startTimeOf(owner.pid) === owner.startTime ? owner : undefined
}

/** The owner a lab.json records; undefined when there is none. */
function ownerOf(path: string): LabOwner | undefined {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { owner: LabOwner }).owner
  } catch {
    return undefined
  }
}

/** Sweeps every lab on the machine whose owner process is gone (a killed run of any test or bench). */
export function sweepOrphanLabs(): string[] {
  const swept: string[] = []
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(PREFIX)) continue
    const name = entry.slice(PREFIX.length)
    const owner = ownerOf(join(tmpdir(), entry, 'lab.json'))
    if (owner && startTimeOf(owner.pid) === owner.startTime) continue
    sweepLab(name)
    swept.push(name)
  }
  return swept
}
