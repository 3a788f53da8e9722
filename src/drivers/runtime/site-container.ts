import { createHash } from 'node:crypto'
import type Docker from 'dockerode'
import { SITE_HOME, type SiteSpec } from './types'

/** Labels Berth puts on every container, network and volume it creates. */
export const LABEL = {
  managed: 'dev.berth.managed',
  instance: 'dev.berth.instance',
  siteId: 'dev.berth.site-id',
  slug: 'dev.berth.site-slug',
  /** Hash of what the container was created from; a different hash means "recreate". */
  spec: 'dev.berth.spec',
  /** On an image: `writable` when its programs need to write outside /tmp and the home. */
  rootfs: 'dev.berth.rootfs',
} as const

/** The web server of every site image listens here, unprivileged. */
export const SITE_PORT = 8080
/** The sshd of SSH-enabled sites listens here inside the container, unprivileged. */
export const SSH_PORT = 2222
export { SITE_HOME }
/** The unprivileged `site` user (and group) every site image defines. */
export const SITE_USER = '1000:1000'

/**
 * Bump when containerOptions changes in a way existing containers should pick up: the number is
 * part of the spec hash, so the next ensureSite (reconcile included) recreates them, files kept.
 */
const DEFINITION_VERSION = 2

export interface SiteNames {
  container: string
  network: string
  volume: string
}

/** Names carry the instance id so that Berth instances sharing one engine never collide. */
export function siteNames(instanceId: string, slug: string): SiteNames {
  const base = `berth-${instanceId}-${slug}`
  return { container: base, network: base, volume: `${base}-home` }
}

/** The labels of the site's network and volume (the container adds the spec hash). */
export function siteLabels(instanceId: string, spec: Pick<SiteSpec, 'siteId' | 'slug'>): Record<string, string> {
  return { [LABEL.managed]: 'true', [LABEL.instance]: instanceId, [LABEL.siteId]: spec.siteId, [LABEL.slug]: spec.slug }
}

/** Label filter matching everything of one site of this instance. */
export function siteFilter(instanceId: string, slug: string): { label: string[] } {
  return { label: [`${LABEL.instance}=${instanceId}`, `${LABEL.slug}=${slug}`] }
}

/**
 * What the container is made from, hashed: a different hash means "recreate". The hosting type
 * counts only through its image (vps and dedicated share berth/php:1). Limits (memory,
 * CPU, processes) are left out: they change in place (`limitsOf`, `docker update`), so a plan
 * change within a hosting type restarts nothing. Disk size is left out too: no driver setting
 * enforces it yet (overlay2 on ext4 has no per-container quota).
 */
export function specHash(spec: SiteSpec): string {
  const { image, sshPort } = spec
  const text = JSON.stringify({ v: DEFINITION_VERSION, image, ...(sshPort ? { sshPort } : {}) })
  return createHash('sha256').update(text).digest('hex').slice(0, 16)
}

/** The resource limits of the plan, as the engine's HostConfig holds them. */
export function limitsOf(spec: SiteSpec): { Memory: number; MemorySwap: number; NanoCpus: number; PidsLimit: number } {
  const memory = spec.memoryMb * 1024 * 1024
  // MemorySwap equal to Memory: no swap, so the plan's figure is the real ceiling.
  return { Memory: memory, MemorySwap: memory, NanoCpus: Math.round(spec.cpuCores * 1e9), PidsLimit: spec.pidsLimit }
}

/**
 * What a site's processes run as and are labelled with: the same for a container
 * (containerOptions) and a Swarm service's task (swarm/service-spec.ts).
 */
export function siteProcess(instanceId: string, spec: SiteSpec): { Hostname: string; User: string; WorkingDir: string; Env: string[]; Labels: Record<string, string> } {
  return {
    Hostname: spec.slug.slice(0, 63),
    User: SITE_USER,
    WorkingDir: SITE_HOME,
    // BERTH_SSH tells the image's start script to run sshd (berth/php does; berth/static has none).
    Env: [`HOME=${SITE_HOME}`, ...(spec.sshPort ? ['BERTH_SSH=1'] : [])],
    Labels: { ...siteLabels(instanceId, spec), [LABEL.spec]: specHash(spec) },
  }
}

/** The site's /tmp: noexec, as nothing a site runs needs to execute from there; its own programs live in its home. */
export const SITE_TMP = { path: '/tmp', options: 'rw,nosuid,nodev,noexec,size=64m,mode=1777', sizeBytes: 64 * 1024 * 1024, mode: 0o1777 } as const

/** The site's log: the engine's JSON files, rotated at 10 MB, three kept. */
export const SITE_LOG = { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } }

export interface ContainerPlan {
  instanceId: string
  spec: SiteSpec
  names: SiteNames
  /** The container's fixed address on its site network. */
  address: string
  /** False for images labelled `dev.berth.rootfs=writable`. */
  readonlyRootfs: boolean
  /** Host address the SSH port is published on (config `ssh.listen_address`). */
  sshListenAddress: string
}

/**
 * The engine's create options for a site container: the isolation defaults of design.md
 * ("Containers"). Both Berth images run with every capability dropped: their servers listen on
 * 8080 as uid 1000 and never switch user, so they need none.
 */
export function containerOptions(plan: ContainerPlan): Docker.ContainerCreateOptions {
  const { spec, names } = plan
  const { Hostname, User, WorkingDir, Env, Labels } = siteProcess(plan.instanceId, spec)
  return {
    name: names.container,
    Image: spec.image,
    Hostname,
    User,
    WorkingDir,
    Env,
    Labels,
    ExposedPorts: { [`${SITE_PORT}/tcp`]: {}, ...(spec.sshPort ? { [`${SSH_PORT}/tcp`]: {} } : {}) },
    HostConfig: {
      // Only sshd is published on the host; the web server is reached through the edge alone.
      ...(spec.sshPort ? { PortBindings: { [`${SSH_PORT}/tcp`]: [{ HostIp: plan.sshListenAddress, HostPort: String(spec.sshPort) }] } } : {}),
      NetworkMode: names.network,
      Mounts: [{ Type: 'volume', Source: names.volume, Target: SITE_HOME }],
      // docker-init as PID 1 forwards SIGTERM and reaps, so a stop takes milliseconds.
      Init: true,
      Privileged: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      IpcMode: 'private',
      ReadonlyRootfs: plan.readonlyRootfs,
      Tmpfs: { [SITE_TMP.path]: SITE_TMP.options },
      ...limitsOf(spec),
      LogConfig: SITE_LOG,
      RestartPolicy: { Name: 'unless-stopped', MaximumRetryCount: 0 },
    },
    NetworkingConfig: {
      EndpointsConfig: { [names.network]: { IPAMConfig: { IPv4Address: plan.address } } },
    },
  }
}
