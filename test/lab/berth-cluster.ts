import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, startBerth, type Berth } from '../helpers/binary'
import { buyDirect, waitForSite } from '../helpers/purchase'
import { startLab, type ExecOptions, type ExecResult, type Lab, type LabNode, type LabProcess } from './cluster-lab'
import { leftovers } from './lab-host'

/**
 * Berth on the two-node lab (cluster-lab.ts), for the cluster's end-to-end tests and benchmarks:
 * the compiled control plane in node A (cluster.enabled, its private address, A's engine) and a
 * node agent joined from node B, both run as an admin would run them.
 *
 * @example
 *   const lab = await startLab('cluster')
 *   const control = await startControlPlane(lab)
 *   const b = await joinNode(lab, control, 'B')
 *   const { data } = await buyDirect(control.url, { slug })   // test/helpers/purchase.ts
 *   await viaEdge(control.url, slug)
 */

/** Berth's port inside node A (the namespace is the lab's own: no other test listens there). */
export const CONTROL_PORT = 8080
/** cluster.agent_port's default: the agent's API; the engine pass-through is the next port. */
export const AGENT_PORT = 7710
/** The site images Berth runs; the control plane's engine gets them from the machine's (no registry, no build). */
export const SITE_IMAGES = ['berth/static:1', 'berth/php:1']
/** The image of app sites (issue 39): 632 MB, so loaded only by the tests that deploy a source (loadIntoControl). */
export const APP_IMAGE = 'berth/app:1'

export interface ControlPlane {
  /** The running `berth serve` (stop, restart, kill9, output), as startBerth gives it. */
  berth: Berth
  /** Where the test process reaches its listener (API, edge): A's host-side address. */
  url: string
  /** What nodes join: A's private address (`berth node join URL`). */
  joinUrl: string
  /** Its config file (TOML), read by `serve` and every admin command. */
  configPath: string
  dataDir: string
  /** `dist/berth ARGS --config FILE` in node A, as the admin on the control plane's box; `json` when stdout parses. */
  cli(args: string[], opts?: ExecOptions): Promise<ExecResult & { json?: any }>
  /** A new join token (`berth nodes token`). */
  joinToken(): Promise<string>
  /** A new join token with where to join and the certificate to pin (`berth nodes token --json`). */
  joinCommand(): Promise<{ token: string; url: string; fingerprint: string }>
  /** The binary it runs (dist/berth unless given). */
  binary: string
}

export interface JoinedNode {
  node: LabNode
  /** Berth's id of the node, as `berth node join` printed it. */
  id: string
  /** The agent's data folder (node.json, node.key, node.pem, client-ca.pem). */
  dataDir: string
  /** The running `berth node serve`. */
  agent: LabProcess
  /** From the token's request to the agent answering on its port, ms. */
  joinMs: number
  /** Starts `berth node serve` again (after agent.kill, or after the node's engine came back). */
  restartAgent(): Promise<void>
}

/** The control plane's config: the keys the lab sets (extra TOML is appended; a section may not appear twice). */
function controlConfig(lab: Lab, dataDir: string, extra: string, firewall: boolean): string {
  return [
    '[server]',
    `listen = "0.0.0.0:${CONTROL_PORT}"`,
    `site_url = "http://${lab.hostAddress('A')}:${CONTROL_PORT}"`,
    `data_dir = "${dataDir}"`,
    '[containers]',
    `docker_socket = "${lab.dockerSocket('A')}"`,
    // Off unless asked (startControlPlane's `firewall`): the nodes are namespaces of their own, so
    // it is safe either way; on, berth serve keeps it in A and every joined agent in its node.
    `firewall = ${firewall}`,
    '[dns]',
    'listen = "off"',
    '[cluster]',
    'enabled = true',
    `address = "${lab.address('A')}"`,
    `agent_port = ${AGENT_PORT}`,
    extra,
  ].join('\n') + '\n'
}

/**
 * Starts `dist/berth serve --config FILE` in node A as the control plane: listening on every
 * address of A (the host reaches it on A's host-side address, B on A's private one), on A's
 * engine, with cluster.enabled and cluster.address = A's private address, a data folder in the
 * lab's. Loads `images` (default SITE_IMAGES) into A's engine from the machine's first.
 * `config` is TOML appended to the file (new sections only: plans, payments, ...); `firewall`
 * turns containers.firewall on (off by default).
 */
export async function startControlPlane(
  lab: Lab,
  opts: { config?: string; env?: Record<string, string>; images?: string[]; binary?: string; firewall?: boolean } = {},
): Promise<ControlPlane> {
  const berthBinary = opts.binary ?? BINARY
  await loadIntoControl(lab, opts.images ?? SITE_IMAGES, berthBinary)
  const dataDir = join(lab.root, 'a', 'berth')
  mkdirSync(dataDir, { recursive: true })
  const configPath = join(lab.root, 'a', 'berth.toml')
  writeFileSync(configPath, controlConfig(lab, dataDir, opts.config ?? '', opts.firewall ?? false))
  // startBerth spawns `binary serve ...`: a script that runs the binary inside node A.
  const binary = join(lab.root, 'a', 'berth-in-a')
  writeFileSync(binary, `#!/bin/sh\nexec ${lab.command('A', [berthBinary]).map(shellQuote).join(' ')} "$@"\n`)
  chmodSync(binary, 0o755)
  const url = `http://${lab.hostAddress('A')}:${CONTROL_PORT}`
  const berth = await startBerth({
    binary,
    port: CONTROL_PORT,
    listenHost: '0.0.0.0',
    urlHost: lab.hostAddress('A'),
    siteUrl: url,
    dataDir,
    args: ['--config', configPath],
    // startBerth turns the firewall off in the environment, which outranks the file.
    env: { BERTH_CONTAINERS_DOCKER_SOCKET: lab.dockerSocket('A'), ...(opts.firewall ? { BERTH_CONTAINERS_FIREWALL: 'true' } : {}), ...opts.env },
  })
  const cli = async (args: string[], execOpts: ExecOptions = {}) => {
    const res = await lab.exec('A', [berthBinary, ...args, '--config', configPath], { ...execOpts, env: { ...opts.env, ...execOpts.env } })
    let json: any
    try {
      json = JSON.parse(res.stdout)
    } catch {
      json = undefined
    }
    return { ...res, json }
  }
  const joinCommand = async () => {
    const res = await cli(['nodes', 'token', '--json'])
    const token = /^bnj_[A-Za-z0-9_-]{43}$/.exec(res.json?.token ?? '')?.[0]
    if (!token) throw new Error(`berth nodes token printed no token: ${res.stdout}${res.stderr}`)
    return { token, url: res.json.url as string, fingerprint: res.json.fingerprint as string }
  }
  return {
    berth,
    url,
    joinUrl: `http://${lab.address('A')}:${CONTROL_PORT}`,
    configPath,
    dataDir,
    cli,
    binary: berthBinary,
    async joinToken() {
      return (await joinCommand()).token
    },
    joinCommand,
  }
}

/**
 * Builds `images` with `binary` on the machine's engine (up to date: a second) and loads them into
 * node A's, the control plane's (the manager's), from which Berth carries them to the nodes.
 */
export async function loadIntoControl(lab: Lab, images: string[], binary = BINARY): Promise<void> {
  if (images.length === 0) return
  await siteImagesOf(binary, images)
  await lab.loadImages(images, 'A')
}

/**
 * Makes the machine's engine hold the site images of `binary` (`berth images build`: a second or
 * so when they are up to date, seconds for one rebuilt) before the lab loads them. The tags are
 * fixed (berth/php:1), and worktrees of this shared machine build their own definitions under
 * them: without it a test ran whichever image another build left (seen: berth/php:1 believing
 * X-Forwarded-For from everyone, made by a branch before that change).
 */
async function siteImagesOf(binary: string, images: string[]): Promise<void> {
  const kinds = [...SITE_IMAGES, APP_IMAGE].filter((image) => images.includes(image)).map((image) => /^berth\/(\w+):/.exec(image)![1]!)
  const only = kinds.length === 1 ? ['--only', kinds[0]!] : []
  if (kinds.length === 0) return
  const build = Bun.spawn([binary, 'images', 'build', ...only], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
  if (code !== 0) throw new Error(`${binary} images build exited with ${code}: ${err || out}`)
}

/**
 * Joins a node (B by default) as a hoster would, but without systemd: `berth nodes token --json` on
 * the control plane, then in the node `berth node join {joinUrl} --token T --address {its private
 * address} --name lab-b --docker-socket {its engine} --data DIR --no-systemd --json` (which joins
 * its engine to the swarm), then `berth node serve --data DIR` as the unit would; resolves once the
 * agent accepts connections on its port (joinMs) and the control plane heard from it (heardOf).
 * Runs the control plane's binary.
 */
export async function joinNode(lab: Lab, control: ControlPlane, node: LabNode = 'B', opts: { env?: Record<string, string>; port?: number } = {}): Promise<JoinedNode> {
  const started = performance.now()
  const { token, url, fingerprint } = await control.joinCommand()
  const dataDir = join(lab.root, node.toLowerCase(), 'berth-node')
  const joined = await lab.exec(node, [control.binary, 'node', 'join', url, '--token', token, '--fingerprint', fingerprint, '--address', lab.address(node),
    '--port', String(opts.port ?? AGENT_PORT), '--name', `lab-${node.toLowerCase()}`, '--docker-socket', lab.dockerSocket(node), '--data', dataDir, '--no-systemd', '--json'], { env: opts.env })
  let id = ''
  try {
    id = (JSON.parse(joined.stdout) as { node_id?: string }).node_id ?? ''
  } catch {
    // not JSON: said below
  }
  if (!id) throw new Error(`berth node join printed no node_id: ${joined.stdout}${joined.stderr}`)
  const serve = () => lab.spawn(node, [control.binary, 'node', 'serve', '--data', dataDir], opts.env)
  const result: JoinedNode = {
    node,
    id,
    dataDir,
    agent: serve(),
    joinMs: 0,
    async restartAgent() {
      await result.agent.kill()
      result.agent = serve()
      await waitForAgent(lab, node, result.agent, opts.port)
    },
  }
  await waitForAgent(lab, node, result.agent, opts.port)
  await waitForActive(control, id)
  result.joinMs = performance.now() - started
  await heardOf(control, id)
  return result
}

/** Waits until berth serve's health monitor saw the joined node's agent answer (joining → active), 15 s at most. */
async function waitForActive(control: ControlPlane, id: string): Promise<void> {
  const deadline = Date.now() + 15_000
  let last = ''
  while (Date.now() < deadline) {
    const list = await control.cli(['nodes', 'list', '--json'])
    const state = (list.json as { id: string; state: string }[] | undefined)?.find((n) => n.id === id)?.state
    if (state && state !== 'joining') return
    last = `${state ?? 'not listed'}: ${list.stdout}${list.stderr}`
    await Bun.sleep(200)
  }
  throw new Error(`node ${id} was still not active 15 s after its agent listened (${last})`)
}

/**
 * Waits until the control plane's health round heard from the node's agent (`last_seen_at` in
 * `berth nodes list`), 20 s at most: until then placement counts none of its memory (the Swarm id
 * it weighs the node's engine by comes with that answer, docs/cluster.md), and a site bought at
 * once went to the control plane (cluster-security.e2e, 1 run in 5).
 */
async function heardOf(control: ControlPlane, id: string): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const { json } = await control.cli(['nodes', 'list', '--json'], { allowFailure: true })
    const nodes = (json?.nodes ?? json ?? []) as { id: string; last_seen_at: string | null }[]
    if (nodes.some((n) => n.id === id && n.last_seen_at !== null)) return
    if (Date.now() > deadline) throw new Error(`the control plane did not hear from node ${id} within 20 s of its agent listening`)
    await Bun.sleep(100)
  }
}

/** Waits until the agent accepts TCP connections on the node's private address (the host routes there), 15 s at most. */
async function waitForAgent(lab: Lab, node: LabNode, agent: LabProcess, port = AGENT_PORT): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (agent.proc.exitCode !== null) throw new Error(`berth node serve exited with ${agent.proc.exitCode}:\n${agent.output()}`)
    if (await accepts(lab.address(node), port)) return
    await Bun.sleep(50)
  }
  throw new Error(`the agent of node ${node} did not listen on ${lab.address(node)}:${port} within 15 s:\n${agent.output()}`)
}

/** Whether a TCP connection to host:port is accepted (then closed at once). */
async function accepts(hostname: string, port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname, port, socket: { data() {}, error() {} } })
    socket.end()
    return true
  } catch {
    return false
  }
}

/** A word for sh, single-quoted. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`
}

/**
 * A test file's lab with one site (its beforeAll): the lab `name`, the control plane in A with
 * `image` loaded, node B joined, and a site bought on `sku` (slug `{slugPrefix}` and 4 random
 * characters, placed where placement chooses) active within `activeWithinMs`.
 */
export async function labWithSite(name: string, opts: { image: string; sku: string; slugPrefix: string; activeWithinMs: number }): Promise<{ lab: Lab; control: ControlPlane; b: JoinedNode; site: { slug: string; key: string } }> {
  const lab = await startLab(name)
  const control = await startControlPlane(lab, { images: [opts.image] })
  const b = await joinNode(lab, control, 'B')
  const slug = `${opts.slugPrefix}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku: opts.sku })).data.api_key as string
  const state = await waitForSite(control.url, key, slug, opts.activeWithinMs)
  if (state !== 'active') throw new Error(`the lab's site ${slug} is ${state}, not active, ${opts.activeWithinMs / 1000} s after its purchase`)
  return { lab, control, b, site: { slug, key } }
}

/**
 * A test file's afterAll: stops Berth and the lab (either may be missing when beforeAll failed),
 * prints `figures` under `title`, and returns what the lab left behind (expected empty).
 */
/** The node `berth nodes list --json` names as holding `slug` (undefined while the command fails or no node holds it). */
export async function nodeOfSite(control: ControlPlane, slug: string): Promise<string | undefined> {
  const { json } = await control.cli(['nodes', 'list', '--json'], { allowFailure: true })
  return ((json?.nodes ?? json ?? []) as { id: string; sites: string[] }[]).find((n) => n.sites.includes(slug))?.id
}

export async function stopLabWithFigures(name: string, parts: { lab?: Lab; control?: ControlPlane }, title: string, figures: Record<string, string>): Promise<string[]> {
  await parts.control?.berth.stop().catch(() => {})
  await parts.lab?.stop()
  console.log(`${title}: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  return leftovers(name)
}

/**
 * The longest run of answers other than 200 among polled `[at ms, status, ...]` samples: from its
 * first to the first 200 after it, in ms (0 when every answer was 200).
 */
export function longestOutage(seen: readonly (readonly [number, number, ...unknown[]])[]): number {
  let longest = 0
  let from: number | null = null
  for (const [at, status] of seen) {
    if (status !== 200 && from === null) from = at
    if (status === 200 && from !== null) {
      longest = Math.max(longest, at - from)
      from = null
    }
  }
  return longest
}
