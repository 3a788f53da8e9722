import type Docker from 'dockerode'
import { SITE_HOME, type SiteSpec } from '../types'
import { LABEL, SITE_LOG, SITE_TMP, siteLabels, siteNames, siteProcess, SSH_PORT, type SiteNames } from '../site-container'
import { apiAtLeast, SERVICE_NO_NEW_PRIVILEGES_API, SERVICE_SWAP_API } from './hardening'

/** On a site's service: the Berth node (CONTROL_NODE or a node id) it is pinned to. */
export const NODE_LABEL = 'dev.berth.node'

/** Seconds Swarm waits before it replaces a task whose container ended: short, as the healer's 2 s goal needs. */
const RESTART_DELAY_NS = 200_000_000

/** The names of a site on Swarm: today's names, plus the configuration network that holds its /28 on a node. */
export interface ServiceNames extends SiteNames {
  /** The service (`berth-{instance}-{slug}`, as the container's name on one box). */
  service: string
  /** `--config-only` network on the node with the site's subnet; the swarm network's `ConfigFrom`. */
  config: string
}

export function serviceNames(instanceId: string, slug: string): ServiceNames {
  const names = siteNames(instanceId, slug)
  return { ...names, service: names.container, config: `${names.network}-config` }
}

/** The plan's limits as a service's `Resources.Limits` (swap apart: `Resources.SwapBytes`, API 1.52+). */
export function serviceLimits(spec: SiteSpec): { NanoCPUs: number; MemoryBytes: number; Pids: number } {
  return { NanoCPUs: Math.round(spec.cpuCores * 1e9), MemoryBytes: spec.memoryMb * 1024 * 1024, Pids: spec.pidsLimit }
}

export interface ServicePlan {
  instanceId: string
  spec: SiteSpec
  names: ServiceNames
  /** The Berth node (label) and its Swarm node id (constraint). */
  nodeId: string
  swarmNodeId: string
  readonlyRootfs: boolean
  /** The manager's Engine API version ("1.41"): what the spec can say (hardening.ts). */
  apiVersion: string
  /** 0 to create it stopped (Placement.placeOn), else 1. */
  replicas?: number
}

/**
 * The service of one site: one replica restarted whatever ends it, pinned to one node, on its own
 * swarm-scoped bridge network with dnsrr (no VIP: this kernel has no IPVS), the plan's limits, its
 * volume, and the isolation of a site container on one box (site-container.ts) as far as the
 * manager's API carries it: no capabilities, read-only root, docker-init, a size-bound /tmp
 * (noexec, nosuid, nodev: Docker's default for a tmpfs mount), no-new-privileges from API 1.44,
 * no swap from API 1.52. Before those, hardening.ts says what closes the gaps (the daemon-wide
 * no-new-privileges, `withoutSwap` on the node); docs/cluster.md.
 */
export function serviceSpec(plan: ServicePlan): Docker.CreateServiceOptions {
  const { spec, names } = plan
  const proc = siteProcess(plan.instanceId, spec)
  const volumeLabels = siteLabels(plan.instanceId, spec)
  return {
    Name: names.service,
    Labels: { ...proc.Labels, [NODE_LABEL]: plan.nodeId },
    TaskTemplate: {
      ContainerSpec: {
        Image: spec.image,
        Labels: proc.Labels,
        Hostname: proc.Hostname,
        User: proc.User,
        Dir: proc.WorkingDir,
        Env: proc.Env,
        Init: true,
        ReadOnly: plan.readonlyRootfs,
        CapabilityDrop: ['ALL'],
        ...(apiAtLeast(plan.apiVersion, SERVICE_NO_NEW_PRIVILEGES_API) ? { Privileges: { NoNewPrivileges: true } } : {}),
        Mounts: [
          { Type: 'volume', Source: names.volume, Target: SITE_HOME, VolumeOptions: { Labels: volumeLabels } },
          { Type: 'tmpfs', Target: SITE_TMP.path, TmpfsOptions: { SizeBytes: SITE_TMP.sizeBytes, Mode: SITE_TMP.mode } },
        ],
        StopGracePeriod: 10_000_000_000,
      },
      // SwapBytes 0: MemorySwap = Memory on the node, as on one box.
      Resources: { Limits: serviceLimits(spec), ...(apiAtLeast(plan.apiVersion, SERVICE_SWAP_API) ? { SwapBytes: 0 } : {}) },
      RestartPolicy: { Condition: 'any', Delay: RESTART_DELAY_NS, MaxAttempts: 0 },
      Placement: { Constraints: [`node.id==${plan.swarmNodeId}`] },
      Networks: [{ Target: names.network }],
      LogDriver: { Name: SITE_LOG.Type, Options: SITE_LOG.Config },
    },
    Mode: { Replicated: { Replicas: plan.replicas ?? 1 } },
    EndpointSpec: {
      Mode: 'dnsrr',
      // Host mode: the port on the node's own address, no routing mesh (none without IPVS).
      Ports: spec.sshPort ? [{ Protocol: 'tcp', TargetPort: SSH_PORT, PublishedPort: spec.sshPort, PublishMode: 'host' }] : [],
    },
  } as unknown as Docker.CreateServiceOptions
}

/** A service as the manager's inspect answers it (the part Berth reads). */
export interface ServiceInfo {
  ID: string
  Version: { Index: number }
  Spec: {
    Name: string
    Labels?: Record<string, string>
    TaskTemplate: { ContainerSpec: { Image: string }; Resources?: { Limits?: Record<string, number> }; ForceUpdate?: number; Placement?: { Constraints?: string[] } }
    Mode?: { Replicated?: { Replicas?: number } }
    [key: string]: unknown
  }
}

/** Why a service cannot serve `spec` as it is (image or SSH port, site id), or null; limits are apart (`limitsDiffer`). */
export function serviceDrift(service: ServiceInfo, spec: SiteSpec, specHash: string): string | null {
  const labels = service.Spec.Labels ?? {}
  if (labels[LABEL.siteId] !== spec.siteId) return 'it belongs to another site id'
  if (labels[LABEL.spec] !== specHash) return 'its image or SSH port changed'
  return null
}

/** True when the service's limits are not the plan's. */
export function limitsDiffer(service: ServiceInfo, spec: SiteSpec): boolean {
  const now = service.Spec.TaskTemplate.Resources?.Limits ?? {}
  const wanted = serviceLimits(spec)
  return (Object.keys(wanted) as (keyof typeof wanted)[]).some((k) => (now[k] ?? 0) !== wanted[k])
}
