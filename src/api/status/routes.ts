import { Elysia, t } from 'elysia'
import { JsonInteger, ok } from '../http/schemas'
import type { StatusInfo } from '../../domain/status'
import type { ApiPlugins } from '../plugins'

export const PlatformStatus = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('degraded')], { description: '`degraded` while the container engine does not answer (`engine.reachable` false): sites may be down and changes to them fail; or while the server is low on disk space (`disk.low_space` true): new sites, snapshots and backups are refused (507) and the existing sites keep working.' }),
  region: t.String(),
  provider: t.String(),
  api_version: t.Literal('v1'),
  version: t.String({ description: 'Version of the berth binary.' }),
  test_mode: t.Boolean({ description: 'True while the built-in test processor takes payments: no real money moves.' }),
  payment_processor: t.String(),
  dns: t.Object({
    port: t.Union([JsonInteger({}), t.Null()], { description: "The authoritative DNS server's port (UDP and TCP); null when it is off." }),
    nameservers: t.Array(t.String(), { description: 'The nameservers of every zone Berth serves; set them at your registrar.' }),
  }),
  registrar: t.Object({
    name: t.String({ examples: ['sandbox'] }),
    sandbox: t.Boolean({ description: 'True when domain registrations are recorded locally only.' }),
  }),
  engine: t.Object({
    reachable: t.Union([t.Boolean(), t.Null()], {
      description: 'Whether the container engine that runs the sites answered its last liveness check (every 2 s); null in the first second after start, before the first.',
    }),
  }),
  offsite: t.Object({
    enabled: t.Boolean({ description: 'Whether encrypted copies of the archives, the store and the certificates leave the server (offsite.url).' }),
    last_store_copy_age_seconds: t.Union([JsonInteger({ minimum: 0 }), t.Null()], {
      description: 'Seconds since the last copy of the store off the server was made (every offsite.store_interval_seconds, 300 by default); null when there is none.',
    }),
  }, { description: 'Copies off the server, from which the hoster can rebuild it (docs/operations.md, "Copies off the box").' }),
  disk: t.Object({
    low_space: t.Boolean({ description: 'True while free_bytes is under threshold_bytes: new sites (checkouts, sites/create), snapshots and backups are refused with 507 INSUFFICIENT_STORAGE until the hoster frees space; everything that exists keeps working.' }),
    free_bytes: JsonInteger({ minimum: 0, description: "Free bytes on the filesystem of Berth's data folder (its store, archives and certificates), read now." }),
    total_bytes: JsonInteger({ minimum: 0, description: 'Size of that filesystem in bytes.' }),
    threshold_bytes: JsonInteger({ minimum: 0, description: 'The free space Berth keeps for itself: the larger of disk.reserve_bytes and disk.reserve_percent of total_bytes.' }),
    sites_disk_gb: JsonInteger({ minimum: 0, description: "The sum of the plans' disk_gb over the sites that exist (not deleted): the disk the server has promised, which may be more than total_bytes (overcommit is the hoster's choice)." }),
  }, { description: "The server's disk (docs/operations.md, \"When the disk is low\")." }),
})

export const statusRoutes = (plugins: ApiPlugins, info: StatusInfo) =>
  new Elysia({ name: 'status-routes' })
    .use(plugins)
    .get('/status/', () => {
      const room = info.room.figures()
      return {
        status: info.engine.reachable === false || room.low ? ('degraded' as const) : ('ok' as const),
        region: info.region,
        provider: info.provider,
        api_version: 'v1' as const,
        version: info.version,
        test_mode: info.testMode,
        payment_processor: info.processor,
        dns: info.dns,
        registrar: info.registrar,
        engine: { reachable: info.engine.reachable },
        offsite: { enabled: info.offsite.enabled, last_store_copy_age_seconds: info.offsite.lastStoreCopyAgeSeconds() },
        disk: { low_space: room.low, free_bytes: room.freeBytes, total_bytes: room.totalBytes, threshold_bytes: room.thresholdBytes, sites_disk_gb: room.sitesDiskGb },
      }
    }, {
      public: true,
      response: ok(PlatformStatus),
      detail: { tags: ['Discovery'], summary: 'Platform status', operationId: 'getStatus' },
    })
