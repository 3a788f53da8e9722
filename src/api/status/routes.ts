import { Elysia, t } from 'elysia'
import { JsonInteger, ok } from '../http/schemas'
import type { StatusInfo } from '../../domain/status'
import type { ApiPlugins } from '../plugins'

export const PlatformStatus = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('degraded')], { description: '`degraded` while the container engine does not answer (`engine.reachable` false): sites may be down and changes to them fail.' }),
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
})

export const statusRoutes = (plugins: ApiPlugins, info: StatusInfo) =>
  new Elysia({ name: 'status-routes' })
    .use(plugins)
    .get('/status/', () => ({
      status: info.engine.reachable === false ? ('degraded' as const) : ('ok' as const),
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
    }), {
      public: true,
      response: ok(PlatformStatus),
      detail: { tags: ['Discovery'], summary: 'Platform status', operationId: 'getStatus' },
    })
