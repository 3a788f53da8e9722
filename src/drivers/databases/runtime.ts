import { createHash } from 'node:crypto'
import type Docker from 'dockerode'
import { KeyedLock } from '../../lib/keyed-lock'
import type { Logger } from '../../lib/logger'
import type { DatabaseRunning, DatabaseRuntime, DatabaseSpec, DatabaseState, DbEngine } from '../../domain/databases'
import { ensureSiteVolume } from '../runtime/container-ops'
import { engineCall, ignoring, orNull } from '../runtime/engine'
import { LABEL, siteNames, SITE_LOG } from '../runtime/site-container'
import type { SiteDisks } from '../runtime/site-disks'
import { databaseAddresses } from '../runtime/subnets'
import type { Engine } from '../runtime/site-runtime'
import { DatabaseCommandError, DatabaseStartError } from './errors'
import { runIn, startedUp, startingUp, waitingFor, type DbExec, type DbExecResult } from './exec'
import { KITS } from './images'
import { DATA_MOUNT, type EngineKit } from './kit'
import { allOk } from './redis'

/** Labels of a database's container and volume, besides the site's instance, id and slug (never `managed`: no site container). */
export const DB_LABEL = { role: 'dev.berth.role', name: 'dev.berth.database', engine: 'dev.berth.db-engine' } as const
export const DB_ROLE = 'database'

/** Bump when containerOptions changes in a way existing containers should pick up (recreated, data kept). */
const DEFINITION_VERSION = 3
/** Processes and threads of one database (postgres: one per connection; MariaDB: threads). */
const PIDS_LIMIT = 512
const STOP_TIMEOUT_S = 30

export interface DockerDatabaseRuntimeOptions {
  instanceId: string
  log: Logger
  /** The image of each engine (config containers.image_postgres/_mariadb/_redis). */
  images: Record<DbEngine, string>
  /** The engine that holds the site's network and volume (SiteHost.volumeOn; this box: its engine). */
  engineOf(slug: string): Promise<Engine>
  /** Every engine that may hold this instance's databases (listManaged). */
  allEngines(): Promise<Engine[]>
  /** The sites' disks (drivers/runtime/site-disks): each database's volume gets a disk of its own. */
  disks: SiteDisks
  /** How long a start may take to answer a query (default 120 s: MariaDB's first start on two busy cores takes 20). */
  startTimeoutMs?: number
  /** A cluster: the engine of a Berth node (`onNode`). Absent on one box. */
  engineOfNode?(nodeId: string): Promise<Engine>
  /**
   * Makes the site's network joinable by a container on `engine` (a cluster: its configuration
   * network on that node and its swarm network, attachable). Absent: it must exist on `engine`.
   */
  networkOn?(engine: Engine, site: { siteId: string; slug: string }): Promise<void>
  /** Puts `image` on `engine` when it lacks it (a cluster: carried from the manager, as a site's image). */
  imageOn?(engine: Engine, image: string): Promise<void>
}

/** `berth-{instance}-{slug}-db-{name}` for the container and its volume; `db-{name}` on the site's network. */
export function databaseNames(instanceId: string, slug: string, name: string) {
  const base = `${siteNames(instanceId, slug).container}-db-${name}`
  return { container: base, volume: base, alias: `db-${name}`, network: siteNames(instanceId, slug).network }
}

/**
 * Databases as containers (contract: src/domain/databases/ports.ts): one per database, from
 * berth/{engine}:1, on its site's network under the alias db-{name}, with its data on a volume of
 * its own holding an ext4 disk of the plan's size (SiteDisks), memory and CPU limits, every
 * capability dropped but those its start script needs to become the server's account, nothing
 * published on the host. Work inside runs through the engine's exec (no connection from Berth:
 * on a cluster's node the site's network is not reachable from here).
 */
export class DockerDatabaseRuntime implements DatabaseRuntime {
  /** Per database: an ensure, a stop, a removal, a new password or a restore never overlap. */
  private locks = new KeyedLock()
  /** Per site: the choice of a new database container's address and its creation. */
  private addressing = new KeyedLock()

  /** This runtime on one node's engine, wherever the site is placed (a move's dump and restore); only on a cluster. */
  readonly onNode?: (nodeId: string) => DockerDatabaseRuntime

  constructor(private opts: DockerDatabaseRuntimeOptions) {
    const engineOfNode = opts.engineOfNode
    if (engineOfNode) this.onNode = (nodeId) => new DockerDatabaseRuntime({ ...opts, engineOf: () => engineOfNode(nodeId) })
  }

  async ensure(spec: DatabaseSpec): Promise<DatabaseRunning> {
    const engine = await this.opts.engineOf(spec.slug)
    return this.locked(spec.slug, spec.name, engine, async () => {
      const kit = KITS[spec.engine]
      const names = databaseNames(this.opts.instanceId, spec.slug, spec.name)
      const docker = engine.docker
      if (this.opts.networkOn) await this.opts.networkOn(engine, spec)
      else if (!(await orNull(docker.getNetwork(names.network).inspect()))) throw new Error(`The network of site '${spec.slug}' does not exist; prepare the site first.`)
      await this.opts.imageOn?.(engine, this.opts.images[spec.engine])
      const image = await orNull(docker.getImage(this.opts.images[spec.engine]).inspect())
      let info = await this.own(docker, names.container)
      if (info && !(await this.opts.disks.mounted(engine, names.volume))) {
        // The box restarted: the restart policy ran it on the empty folder beneath its disk.
        await ignoring([304, 404], docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
        info = { ...info, State: { ...info.State, Running: false } }
      }
      const hash = specHash(spec, kit, this.opts.images[spec.engine])
      if (info && (info.Config.Labels?.[LABEL.spec] !== hash || (image && info.Image !== image.Id) || info.State.Dead)) {
        this.opts.log.info('recreating database container', { site: spec.slug, database: spec.name })
        await ignoring([404], docker.getContainer(info.Id).remove({ force: true }))
        info = null
      }
      const began = performance.now()
      await ensureSiteVolume(docker, names.volume, this.labels(spec))
      if (!(await this.opts.disks.mounted(engine, names.volume))) await this.opts.disks.ensure(engine, names.volume, spec.diskGb)
      const mounted = performance.now()
      if (!info) {
        if (!image) throw new Error(`The image ${this.opts.images[spec.engine]} is missing; build it with 'berth images build --only ${spec.engine}'.`)
        info = await this.addressing.run(spec.slug, async () => {
          const address = this.opts.networkOn ? null : await this.freeAddress(docker, names.network, spec.siteId)
          return (await docker.createContainer(this.containerOptions(spec, kit, hash, address))).inspect()
        })
      }
      const made = performance.now()
      if (!info.State.Running) await ignoring([304], docker.getContainer(info.Id).start())
      else if (info.State.Paused) await docker.getContainer(info.Id).unpause()
      const started = performance.now()
      const version = await this.waitUntilAnswering(docker, info.Id, spec, kit)
      // Where a start's time went (docs/benchmarks.md "Databases": what a create waits for).
      const ms = (a: number, b: number) => Math.round(b - a)
      this.opts.log.debug('database answering', { site: spec.slug, database: spec.name, disk_ms: ms(began, mounted), container_ms: ms(mounted, made), start_ms: ms(made, started), answer_ms: ms(started, performance.now()) })
      return { host: names.alias, port: kit.port, version }
    })
  }

  async inspect(slug: string, name: string): Promise<DatabaseState | null> {
    const engine = await this.opts.engineOf(slug)
    return this.call(engine, async () => {
      const names = databaseNames(this.opts.instanceId, slug, name)
      const info = await this.own(engine.docker, names.container)
      if (!info) return null
      const disk = await this.opts.disks.usage(engine, names.volume, 0).catch(() => null)
      return { running: info.State.Running, containerId: info.Id, sizeBytes: disk?.usedBytes ?? null }
    })
  }

  async stop(slug: string, name: string): Promise<void> {
    const engine = await this.opts.engineOf(slug)
    await this.locked(slug, name, engine, async () => {
      const info = await this.own(engine.docker, databaseNames(this.opts.instanceId, slug, name).container)
      if (info) await ignoring([304, 404], engine.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
    })
  }

  async remove(slug: string, name: string, opts: { volume: boolean }): Promise<void> {
    const engine = await this.opts.engineOf(slug)
    await this.locked(slug, name, engine, async () => {
      const names = databaseNames(this.opts.instanceId, slug, name)
      const info = await this.own(engine.docker, names.container)
      if (info) {
        // A clean stop first: the server writes what it holds (Redis its RDB) before it goes.
        await ignoring([304, 404], engine.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
        await ignoring([404], engine.docker.getContainer(info.Id).remove({ force: true }))
      }
      if (opts.volume) {
        const volume = await orNull(engine.docker.getVolume(names.volume).inspect())
        if (volume && volume.Labels?.[LABEL.instance] === this.opts.instanceId) await this.opts.disks.removeVolume(engine, names.volume)
      }
      this.opts.log.info('removed database container', { site: slug, database: name, data: opts.volume ? 'removed' : 'kept' })
    })
  }

  async setPassword(spec: DatabaseSpec, password: string): Promise<void> {
    checkPassword(password)
    await this.inRunning(spec, 'change the password of', (kit) => kit.setPassword(spec, password), undefined, true)
  }

  async dump(spec: DatabaseSpec, to: NodeJS.WritableStream): Promise<{ bytes: number }> {
    const result = await this.inRunning(spec, 'dump', (kit) => kit.dump(spec), to)
    return { bytes: result.bytes }
  }

  async restore(spec: DatabaseSpec, from: NodeJS.ReadableStream): Promise<void> {
    await this.inRunning(spec, 'restore', (kit) => ({ ...kit.restore(spec), stdin: from }), undefined, true)
  }

  async logs(slug: string, name: string, tail: number): Promise<string[] | null> {
    const engine = await this.opts.engineOf(slug)
    return this.call(engine, async () => {
      const info = await this.own(engine.docker, databaseNames(this.opts.instanceId, slug, name).container)
      if (!info) return null
      return (await outputOf(engine.docker, info.Id, tail)).split('\n').map((line) => line.replace(/\r$/, '')).filter((line) => line !== '')
    })
  }

  async listManaged(): Promise<Array<{ slug: string; name: string; engine: DbEngine; running: boolean }>> {
    const filters = { label: [`${LABEL.instance}=${this.opts.instanceId}`, `${DB_LABEL.role}=${DB_ROLE}`] }
    const lists = await Promise.all((await this.opts.allEngines()).map(async (engine) => {
      try {
        return await this.call(engine, () => engine.docker.listContainers({ all: true, filters }))
      } catch (err) {
        if (engine.node === null) throw err
        this.opts.log.warn('could not list the databases of a node', { node: engine.nodeId, error: (err as Error).message })
        return []
      }
    }))
    return lists.flat().map((c) => ({
      slug: c.Labels[LABEL.slug] ?? '',
      name: c.Labels[DB_LABEL.name] ?? '',
      engine: c.Labels[DB_LABEL.engine] as DbEngine,
      running: c.State === 'running',
    }))
  }

  /** Runs a kit's command in the database's running container; DatabaseCommandError when it fails. */
  private async inRunning(spec: DatabaseSpec, verb: string, make: (kit: EngineKit) => DbExec, to?: NodeJS.WritableStream, lock = false) {
    const engine = await this.opts.engineOf(spec.slug)
    const run = lock ? (fn: () => Promise<DbExecResult>) => this.locked(spec.slug, spec.name, engine, fn) : (fn: () => Promise<DbExecResult>) => this.call(engine, fn)
    return run(async () => {
      const kit = KITS[spec.engine]
      const info = await this.own(engine.docker, databaseNames(this.opts.instanceId, spec.slug, spec.name).container)
      if (!info?.State.Running) throw new DatabaseCommandError(`The database '${spec.name}' of site '${spec.slug}' is not running; cannot ${verb} it.`, '')
      const exec = make(kit)
      const result = await runIn(engine.docker, info.Id, exec, to)
      const failed = result.code !== 0 || (spec.engine === 'redis' && exec.cmd[0] === 'berth-redis-admin' && !to && !allOk(result.out))
      if (failed) throw new DatabaseCommandError(`Could not ${verb} the database '${spec.name}' of site '${spec.slug}' (exit ${result.code}): ${(result.err || result.out).trim().slice(-500)}`, result.err + result.out)
      return result
    })
  }

  /**
   * Polls until the server takes the administrator, provisions the user and its database, then
   * probes a query as the user over TCP, as a site connects; the version it reports is returned.
   * A container that exits, or a server that does not answer in time, fails with its own last log lines.
   */
  private async waitUntilAnswering(docker: Docker, id: string, spec: DatabaseSpec, kit: EngineKit): Promise<string> {
    checkPassword(spec.password)
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 120_000)
    let last = ''
    let provisioned = false
    // Polled often at first (Redis answers within half a second, PostgreSQL's initdb within two),
    // then every 250 ms: a server's first answer is not waited for longer than it has to be.
    let pause = 20
    // Readiness, provisioning and the probe in one exec while not provisioned (one process in the
    // container and its round trips, not three); the kits whose steps run as one account have it.
    const together = startingUp(kit.ready(), kit.provision(spec), kit.probe(spec))
    const provisionedBy = async (made: Pick<DbExecResult, 'code' | 'out' | 'err'>) => {
      if (made.code !== 0 || (spec.engine === 'redis' && !allOk(made.out))) {
        throw new DatabaseStartError(`Could not make the user of database '${spec.name}': ${(made.err || made.out).trim().slice(-500)}`, await logsOf(docker, id))
      }
      provisioned = true
    }
    /** One try: the probe's answer once the server is ready and provisioned, else what the last step said. */
    const attempt = async (): Promise<DbExecResult | string> => {
      if (!provisioned && together) {
        const step = startedUp(await runIn(docker, id, together))
        if (step.stage === 'waiting') return step.last
        await provisionedBy(step.stage === 'unprovisioned' ? { ...step, code: step.code || 1 } : { code: 0, out: step.provisioned, err: '' })
        return step.stage === 'probed' ? step.probe : ''
      }
      const ready = await runIn(docker, id, waitingFor(kit.ready()))
      if (ready.code !== 0) return (ready.err || ready.out).trim()
      if (!provisioned) await provisionedBy(await runIn(docker, id, kit.provision(spec)))
      return runIn(docker, id, kit.probe(spec))
    }
    while (Date.now() < deadline) {
      const state = (await docker.getContainer(id).inspect()).State
      if (!state.Running || state.Restarting) {
        throw new DatabaseStartError(`The ${spec.engine} server of database '${spec.name}' stopped while starting (exit ${state.ExitCode}).`, await logsOf(docker, id))
      }
      const probe = await attempt()
      if (typeof probe === 'string') {
        last = probe
      } else {
        const version = probe.code === 0 ? kit.versionOf(probe.out) : null
        if (version) return version
        last = (probe.err || probe.out).trim()
      }
      await new Promise((resolve) => setTimeout(resolve, pause))
      pause = Math.min(250, Math.round(pause * 1.5))
    }
    throw new DatabaseStartError(`The ${spec.engine} server of database '${spec.name}' did not answer a query within ${Math.round((this.opts.startTimeoutMs ?? 120_000) / 1000)} s${last ? ` (${last.slice(-300)})` : ''}.`, await logsOf(docker, id))
  }

  /**
   * A free address of the site's subnet for a database on this box's bridge (databaseAddresses):
   * not held by a running container of the network, nor asked for by a stopped one of the site.
   * null (the engine picks) when the network has no IPv4 subnet or every one is taken. A cluster's
   * swarm network needs none: its manager hands out every address, the site's task's too.
   */
  private async freeAddress(docker: Docker, network: string, siteId: string): Promise<string | null> {
    const info = await docker.getNetwork(network).inspect()
    const subnet = (info.IPAM?.Config as Array<{ Subnet?: string }> | undefined)?.find((c) => c.Subnet && !c.Subnet.includes(':'))?.Subnet
    if (!subnet) return null
    const used = new Set<string>()
    for (const c of Object.values((info.Containers ?? {}) as Record<string, { IPv4Address?: string }>)) if (c.IPv4Address) used.add(c.IPv4Address.split('/')[0]!)
    const mine = await docker.listContainers({ all: true, filters: { label: [`${LABEL.instance}=${this.opts.instanceId}`, `${LABEL.siteId}=${siteId}`] } })
    for (const c of mine) {
      const asked = c.NetworkSettings?.Networks?.[network]?.IPAMConfig?.IPv4Address
      if (asked) used.add(asked)
    }
    return databaseAddresses(subnet).find((a) => !used.has(a)) ?? null
  }

  private containerOptions(spec: DatabaseSpec, kit: EngineKit, hash: string, address: string | null): Docker.ContainerCreateOptions {
    const names = databaseNames(this.opts.instanceId, spec.slug, spec.name)
    const memory = spec.memoryMb * 1024 * 1024
    return {
      name: names.container,
      Image: this.opts.images[spec.engine],
      Hostname: names.alias,
      Cmd: kit.command(spec.memoryMb),
      Labels: { ...this.labels(spec), [LABEL.spec]: hash },
      HostConfig: {
        NetworkMode: names.network,
        Mounts: [{ Type: 'volume', Source: names.volume, Target: DATA_MOUNT }],
        Init: true,
        Privileged: false,
        CapDrop: ['ALL'],
        // The start script as root: chown the data folder, become the server's account. KILL: the
        // init (root) forwards `docker stop`'s signal to the server, which runs as another user;
        // without it the init dies and the server is killed unclean (Redis loses what it holds).
        CapAdd: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID', 'KILL'],
        SecurityOpt: ['no-new-privileges'],
        IpcMode: 'private',
        ReadonlyRootfs: true,
        Tmpfs: { '/run': 'rw,nosuid,nodev,noexec,size=16m', '/tmp': 'rw,nosuid,nodev,noexec,size=64m' },
        ShmSize: Math.max(64, Math.floor(spec.memoryMb / 4)) * 1024 * 1024,
        Memory: memory,
        MemorySwap: memory,
        NanoCpus: Math.round(spec.cpuCores * 1e9),
        PidsLimit: PIDS_LIMIT,
        LogConfig: SITE_LOG,
        RestartPolicy: { Name: 'unless-stopped', MaximumRetryCount: 0 },
      },
      NetworkingConfig: { EndpointsConfig: { [names.network]: { Aliases: [names.alias], ...(address ? { IPAMConfig: { IPv4Address: address } } : {}) } } },
    }
  }

  private labels(spec: DatabaseSpec): Record<string, string> {
    return {
      [LABEL.instance]: this.opts.instanceId,
      [LABEL.siteId]: spec.siteId,
      [LABEL.slug]: spec.slug,
      [DB_LABEL.role]: DB_ROLE,
      [DB_LABEL.name]: spec.name,
      [DB_LABEL.engine]: spec.engine,
    }
  }

  /** The container of this name when it is this instance's database, else null. */
  private async own(docker: Docker, name: string): Promise<Docker.ContainerInspectInfo | null> {
    const info = await orNull(docker.getContainer(name).inspect())
    if (!info || info.Name !== `/${name}` || info.Config.Labels?.[LABEL.instance] !== this.opts.instanceId || info.Config.Labels?.[DB_LABEL.role] !== DB_ROLE) return null
    return info
  }

  private locked<T>(slug: string, name: string, engine: Engine, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(`${slug}/${name}`, () => this.call(engine, fn))
  }

  private call<T>(engine: Engine, fn: () => Promise<T>): Promise<T> {
    return engineCall(engine.address, fn)
  }
}

/** What the container is made from, hashed: limits and settings too (a change recreates it, data kept). */
function specHash(spec: DatabaseSpec, kit: EngineKit, image: string): string {
  const text = JSON.stringify({ v: DEFINITION_VERSION, image, engine: spec.engine, cmd: kit.command(spec.memoryMb), memoryMb: spec.memoryMb, cpuCores: spec.cpuCores, site: spec.siteId })
  return createHash('sha256').update(text).digest('hex').slice(0, 16)
}

/** Passwords Berth makes are 32 of [A-Za-z0-9]; anything else could break out of a command line or an ACL rule. */
function checkPassword(password: string): void {
  if (!/^[A-Za-z0-9]{16,128}$/.test(password)) throw new Error('A database password must be 16 to 128 letters and digits.')
}

/** The container's last `tail` lines of output (stdout and stderr, as written). */
async function outputOf(docker: Docker, id: string, tail: number): Promise<string> {
  return demuxed((await docker.getContainer(id).logs({ stdout: true, stderr: true, tail })) as unknown as Buffer)
}

/** Its last 20 lines, for an error's details; '' when they cannot be read. */
async function logsOf(docker: Docker, id: string): Promise<string> {
  return (await outputOf(docker, id, 20).catch(() => '')).trim()
}

/** The text of a non-TTY container's log (8-byte frame headers stripped). */
function demuxed(raw: Buffer): string {
  const parts: Buffer[] = []
  for (let at = 0; at + 8 <= raw.length;) {
    const size = raw.readUInt32BE(at + 4)
    parts.push(raw.subarray(at + 8, at + 8 + size))
    at += 8 + size
  }
  return Buffer.concat(parts).toString('utf8')
}
