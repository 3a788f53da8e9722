import type Docker from 'dockerode'
import { PassThrough } from 'node:stream'
import { stat, statfs } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Logger } from '../../lib/logger'
import { ignoring, orNull, statusOf } from './engine'
import { DISK_SCRIPT, ENTER_ENGINE } from './disk-script'
import { LABEL } from './site-container'
import type { Engine } from './site-runtime'
import { DiskTooSmallError, type SiteDisk } from './types'

/** The site images, any of which can run the disks helper (a shell, nsenter, sleep). */
export const HELPER_IMAGES = ['berth/static:1', 'berth/php:1']

/** The configured site images as the helper's candidates: the shared plans' (the smallest) first. */
export function helperImagesOf(images: { shared: string } & Record<string, string>): string[] {
  return [...new Set([images.shared, ...Object.values(images)])]
}

/** The first of `images` the engine holds; throws naming them when it holds none. */
export async function firstHeld(docker: Docker, images: string[]): Promise<string> {
  for (const image of images) if (await orNull(docker.getImage(image).inspect())) return image
  throw new Error(`The engine holds none of ${images.join(', ')}, which the sites' disks helper runs; build them with 'berth images build'.`)
}

/** A plan's `disk_gb` is in GiB. */
export const GIB = 1024 ** 3

/** The label of an engine's disks helper (no `managed`: it is no site's container). */
export const DISKS_ROLE = 'dev.berth.role'

export interface SiteDisksOptions {
  instanceId: string
  log: Logger
  /** An image present on `engine` the helper can run (a shell and nsenter: either site image). */
  imageOn(engine: Engine): Promise<string>
}

/** What `ensure` found: mounted already, mounted now (the container may have started without it), or made. */
export type DiskState = 'present' | 'mounted' | 'made'

/**
 * Each site's disk: an ext4 filesystem of its plan's `disk_gb` in a sparse image beside its
 * volume's folder, mounted over it (./disk-script.ts says how and why). Berth runs sandboxed
 * (no mount, no loop devices) and a node's engine is another machine, so the work is done by a
 * helper container on each engine (`berth-{instance}-disks`: the host's pids in view, the
 * capabilities mount and loop devices need, no network), through the engine's exec, the same
 * for this box and every node. A site on this box is measured with statfs (no engine call).
 */
export class SiteDisks {
  private helpers = new Map<string, Promise<{ id: string }>>()
  /** Volume folders by engine and volume name: a volume's mount point never changes. */
  private folders = new Map<string, string>()

  constructor(private opts: SiteDisksOptions) {}

  /** Mounts the volume's disk of `diskGb`, made when missing. */
  async ensure(engine: Engine, volume: string, diskGb: number): Promise<DiskState> {
    const out = await this.run(engine, 'ensure', await this.folderOf(engine, volume), diskGb * GIB)
    const state = out.trim() as DiskState
    if (state !== 'present') this.opts.log.info('mounted a site disk', { volume, node: engine.nodeId, state, gb: diskGb })
    return state
  }

  /** Whether the volume's disk is mounted (false without the volume): stat-cheap on this box, an exec on a node. */
  async mounted(engine: Engine, volume: string): Promise<boolean> {
    const folder = await this.folderOf(engine, volume).catch((err) => {
      if (statusOf(err) === 404) return null
      throw err
    })
    if (folder === null) return false
    if (engine.node === null) {
      const [data, parent] = await Promise.all([stat(`${folder}/_data`), stat(folder)])
      return data.dev !== parent.dev
    }
    return (await this.run(engine, 'mounted', folder, 0)).trim() === 'yes'
  }

  /** Its figures; null when it is not mounted. */
  async usage(engine: Engine, volume: string, limitBytes: number): Promise<SiteDisk | null> {
    const folder = await this.folderOf(engine, volume)
    if (engine.node === null) {
      if (!(await this.mounted(engine, volume))) return null
      const s = await statfs(`${folder}/_data`)
      return figures((s.blocks - s.bfree) * s.bsize, s.bavail * s.bsize, limitBytes)
    }
    const [used, available] = (await this.run(engine, 'usage', folder, 0)).trim().split(/\s+/).map(Number)
    return used === undefined || available === undefined || Number.isNaN(used) || Number.isNaN(available) ? null : figures(used, available, limitBytes)
  }

  /** Grows the mounted disk to `diskGb` with the site running; false when this host's kernel refuses an online resize. */
  async grow(engine: Engine, volume: string, diskGb: number): Promise<boolean> {
    const { code, out } = await this.exec(engine, 'grow', await this.folderOf(engine, volume), diskGb * GIB)
    if (code === 5) return false
    if (code !== 0) throw new Error(`Could not grow the disk of ${volume}: ${out.trim()}`)
    this.opts.log.info('grew a site disk online', { volume, node: engine.nodeId, gb: diskGb })
    return true
  }

  /**
   * Brings the disk to `diskGb` offline (its container must be stopped), either way. Throws
   * DiskTooSmallError when its files use more.
   */
  async resize(engine: Engine, volume: string, diskGb: number): Promise<void> {
    const { code, out } = await this.exec(engine, 'resize', await this.folderOf(engine, volume), diskGb * GIB)
    const [word, used] = out.trim().split(/\s+/)
    if (code === 4 && word === 'small') throw tooSmall(Number(used), diskGb)
    if (code !== 0) throw new Error(`Could not resize the disk of ${volume}: ${out.trim()}`)
    this.opts.log.info('resized a site disk', { volume, node: engine.nodeId, gb: diskGb })
  }

  /**
   * SiteHost.resizeDisk for either host: refused (DiskTooSmallError) when the files use more
   * than `diskGb`; grown online when it can be; else `stop` stops the container and the disk
   * is resized offline (the caller's next ensureSite starts it).
   */
  async bringTo(engine: Engine, volume: string, diskGb: number, stop: () => Promise<void>): Promise<void> {
    const now = await this.usage(engine, volume, 0)
    if (now && now.usedBytes >= diskGb * GIB) throw tooSmall(now.usedBytes, diskGb)
    const growing = now === null || diskGb * GIB >= now.usedBytes + now.availableBytes
    if (now && growing && (await this.grow(engine, volume, diskGb))) return
    await stop()
    await this.resize(engine, volume, diskGb)
  }

  /** Unmounts the disk and removes its image; the volume's removal follows. A missing volume is a no-op. */
  async release(engine: Engine, volume: string): Promise<void> {
    const info = await orNull(engine.docker.getVolume(volume).inspect())
    if (!info) return
    this.folders.delete(`${engine.key}\n${volume}`)
    await this.run(engine, 'release', dirname(info.Mountpoint), 0)
  }

  /** Removes the volume with its disk. */
  async removeVolume(engine: Engine, volume: string): Promise<void> {
    await this.release(engine, volume)
    await ignoring([404], engine.docker.getVolume(volume).remove())
  }

  private async folderOf(engine: Engine, volume: string): Promise<string> {
    const key = `${engine.key}\n${volume}`
    const known = this.folders.get(key)
    if (known) return known
    const folder = dirname((await engine.docker.getVolume(volume).inspect()).Mountpoint)
    this.folders.set(key, folder)
    return folder
  }

  private async run(engine: Engine, verb: string, folder: string, limit: number): Promise<string> {
    const { code, out } = await this.exec(engine, verb, folder, limit)
    if (code !== 0) throw new Error(`The disks helper could not ${verb} ${folder} (exit ${code}): ${out.trim()}`)
    return out
  }

  /** Runs a verb of DISK_SCRIPT in the engine's mount namespace, through its helper. */
  private async exec(engine: Engine, verb: string, folder: string, limit: number): Promise<{ code: number; out: string }> {
    const helper = await this.helperOn(engine)
    const run = await engine.docker.getContainer(helper.id).exec({
      Cmd: ['/bin/sh', '-c', ENTER_ENGINE, 'enter', DISK_SCRIPT, verb, folder, String(Math.round(limit))],
      AttachStdout: true,
      AttachStderr: true,
    })
    const stream = await run.start({ hijack: true, stdin: false })
    const chunks: Buffer[] = []
    const sink = new PassThrough()
    sink.on('data', (c: Buffer) => chunks.push(c))
    await new Promise<void>((done, fail) => {
      stream.on('end', done)
      stream.on('close', done)
      stream.on('error', fail)
      engine.docker.modem.demuxStream(stream, sink, sink)
    })
    const { ExitCode } = await run.inspect()
    return { code: ExitCode ?? -1, out: Buffer.concat(chunks).toString('utf8') }
  }

  /** The engine's disks helper, made (or started) once per engine and process. */
  private helperOn(engine: Engine): Promise<{ id: string }> {
    let helper = this.helpers.get(engine.key)
    if (!helper) {
      helper = this.makeHelper(engine)
      this.helpers.set(engine.key, helper)
      helper.catch(() => this.helpers.delete(engine.key))
    }
    return helper.then(async (h) => {
      // An engine restarted since: its restart policy brings the helper back; wait for it.
      const info = await orNull(engine.docker.getContainer(h.id).inspect())
      if (info?.State.Running) return h
      this.helpers.delete(engine.key)
      return this.helperOn(engine)
    })
  }

  private async makeHelper(engine: Engine): Promise<{ id: string }> {
    const name = `berth-${this.opts.instanceId}-disks`
    let info = await orNull(engine.docker.getContainer(name).inspect())
    if (info && info.Config.Labels?.[LABEL.instance] !== this.opts.instanceId) throw new Error(`A container named ${name} is not this Berth instance's disks helper; remove it.`)
    if (!info) {
      await engine.docker.createContainer(helperOptions(name, this.opts.instanceId, await this.opts.imageOn(engine))).catch((err) => ignoring([409], Promise.reject(err)))
      info = await engine.docker.getContainer(name).inspect()
    }
    if (!info.State.Running) await ignoring([304], engine.docker.getContainer(info.Id).start())
    return { id: info.Id }
  }
}

function tooSmall(usedBytes: number, diskGb: number): DiskTooSmallError {
  return new DiskTooSmallError(usedBytes, diskGb * GIB, `Its files use ${usedBytes} bytes, more than ${diskGb} GB holds.`)
}

function figures(usedBytes: number, availableBytes: number, limitBytes: number): SiteDisk {
  return { usedBytes, availableBytes, limitBytes: limitBytes || usedBytes + availableBytes }
}

/**
 * The disks helper: root in a container that sees the host's pids (to enter the engine's mount
 * namespace), with the capabilities that needs (SYS_ADMIN for mount and loop devices,
 * SYS_PTRACE and SYS_CHROOT for nsenter, LINUX_IMMUTABLE for chattr) and the loop devices
 * (block major 7, /dev/loop-control), no network, a read-only root. Not `--privileged`: that
 * asks for every capability, which an engine in a constrained host may not hold.
 */
export function helperOptions(name: string, instanceId: string, image: string): Docker.ContainerCreateOptions {
  return {
    name,
    Image: image,
    User: '0:0',
    Entrypoint: ['sleep'],
    Cmd: ['2147483647'],
    Labels: { [LABEL.instance]: instanceId, [DISKS_ROLE]: 'disks' },
    HostConfig: {
      PidMode: 'host',
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      CapAdd: ['SYS_ADMIN', 'SYS_PTRACE', 'SYS_CHROOT', 'LINUX_IMMUTABLE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'DAC_READ_SEARCH'],
      SecurityOpt: ['apparmor=unconfined', 'seccomp=unconfined'],
      DeviceCgroupRules: ['b 7:* rwm', 'c 10:237 rwm'],
      ReadonlyRootfs: true,
      Memory: 256 * 1024 * 1024,
      RestartPolicy: { Name: 'unless-stopped', MaximumRetryCount: 0 },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
    },
  }
}
