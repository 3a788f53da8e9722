import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable, Uuid } from '../schema'
import { AppRuntimeSchema, DbEngineSchema, DbStateSchema, HostingTypeSchema, SuspenderSchema, VisibleSiteStatusSchema } from '../../core/enums'
import { DnsRecord } from '../dns'
import { Tls } from '../tls'

/** Why a suspended site is suspended, and by whom. */
export const Suspension = t.Object({
  by: t.Union(SuspenderSchema.anyOf, {
    description: "billing: the subscription is unpaid (7 days past due); it comes back by itself once a payment goes through. admin: the hoster suspended the site; only the hoster lifts it (a payment does not). account: the hoster suspended the whole account.",
  }),
  reason: Nullable(t.String({ description: "Why, in the hoster's words (admin, account) or billing's." })),
})
export type SuspensionView = Static<typeof Suspension>

/**
 * A site's status as its view shows it: the stored status, or `recovering` for an active site
 * whose node in a cluster is down (docs/cluster.md): it serves again once the node answers or
 * the hoster brings it back on another node.
 */
export const SiteViewStatus = t.Union([...VisibleSiteStatusSchema.anyOf, t.Literal('recovering')], {
  description: "provisioning, active, suspended, pending_deletion, failed; or recovering: the site is active but does not serve now (its visitors get a 503 page that reloads by itself), and error says why: the server it runs on does not answer, the hoster is moving it to another, or its server process stopped and is being started again. It serves again without any action.",
})

export const Site = t.Object({
  slug: t.String({ description: 'Also the {tenant_slug} of /sites/{tenant_slug}/... routes.' }),
  plan: t.String(),
  hosting_type: HostingTypeSchema,
  status: SiteViewStatus,
  url: t.String({ description: 'Where the site answers: http(s)://{slug}.{sites_domain}.' }),
  domains: t.Array(t.String(), { description: 'Your domains linked to the site (POST /domains/{domain_name}/link/); each and its www are routed here.' }),
  dns_records: t.Array(DnsRecord, { description: "DNS records under the site's own name (POST /sites/{slug}/dns/)." }),
  tls: Tls,
  modules: t.Record(t.String(), t.Boolean(), { description: 'AI modules the plan includes, each with whether it is on.' }),
  resources: t.Object({ memory_mb: t.Integer(), cpu_cores: t.Integer(), disk_gb: t.Integer() }),
  subscription_id: Nullable(Uuid()),
  created_at: DateTime(),
  error: Nullable(t.String({ description: 'Why provisioning failed, for failed sites; why it does not serve, for recovering sites.' })),
  deletion_scheduled_for: Nullable(DateTime()),
  suspension: t.Union([Suspension, t.Null()], { description: 'For a suspended site: who suspended it and why; null otherwise.' }),
  hsts_max_age: Nullable(t.Integer({
    description: "Strict-Transport-Security max-age in seconds, sent on the site's answers over HTTPS (POST /sites/{slug}/settings/); null: no HSTS (the default).",
  })),
  applying: Nullable(t.Union([t.Literal('scale'), t.Literal('restore')], {
    description: "A change being applied to the site's container in the background, after the answer that recorded it: scale (the new plan's limits or image) or restore (the container started again after a canceled deletion). null once the container is in line; poll the site until then.",
  })),
})
export type SiteView = Static<typeof Site>

/** A warning in the site view (docs/api.md, "Disk"): what is about to go wrong and what to do. */
export const SiteWarningSchema = t.Object({
  code: t.String({ description: 'disk_almost_full: the site uses 90 % or more of its disk (its plan\'s disk_gb); app_crashing: a process of its app keeps exiting (app.processes, logs?type=app).' }),
  message: t.String({ description: 'The figures and what to do, in one sentence.' }),
})

/** One declared process of an app site, as its supervisor reports it (issue 39). */
export const AppProcess = t.Object({
  name: t.String({ description: 'web (the one that gets the traffic, on $PORT) or a worker declared in berth.json or the Procfile.' }),
  state: t.Union([t.Literal('starting'), t.Literal('running'), t.Literal('backoff'), t.Literal('crashing'), t.Literal('stopped')], {
    description: 'starting: started, not yet answering (web) or up for under a second; running; backoff: exited, restarting after a delay (1, 2, 4 ... 30 s); crashing: exited 3 times within a minute, still restarted with back-off (see logs?type=app); stopped: not running (the release has none, or the site is stopping).',
  }),
  restarts: t.Integer({ description: 'Restarts since the container started.' }),
  last_exit_code: Nullable(t.Integer({ description: 'The exit code of its last exit; null if it never exited (a signal: 128 + its number).' })),
  since: Nullable(DateTime('When it entered this state.')),
})

/** What an app site runs (issue 39): null for a site that never deployed a source. */
export const SiteApp = t.Object({
  runtime: Nullable(t.Union(AppRuntimeSchema.anyOf, { description: 'What the live release runs as; null while no release serves (git push enabled, or a restore from before the first release: the home\'s public/ is served until a deployment succeeds).' })),
  release: Nullable(Uuid('The deployment whose release serves the site (~/app/releases/{id}); null until one succeeded (the home\'s public/ is served meanwhile).')),
  git_push: t.Boolean({ description: 'Whether a git push to the site deploys it: true once enableGitPush (POST /sites/{slug}/ssh/git/) made it ready, on a plan with SSH.' }),
  processes: Nullable(t.Array(AppProcess, { description: 'Its processes; null when its container does not answer right now.' })),
})
export type SiteAppView = Static<typeof SiteApp>

/** One of a site's databases in its view (docs/api.md, "Databases"). */
export const SiteDatabase = t.Object({
  name: t.String({ examples: ['main'] }),
  engine: DbEngineSchema,
  state: DbStateSchema,
  size_bytes: Nullable(t.Integer({ description: "Bytes of its data on its own disk; null when its server is not running." })),
})
export type SiteDatabaseView = Static<typeof SiteDatabase>

/**
 * One site as GET /sites/{slug}/ shows it: the view plus what its filesystem reports now (issue
 * 38). Lists leave these out: each would cost a statfs, or an engine exec for a site on a node.
 */
export const SiteDetail = t.Object({
  ...Site.properties,
  usage: t.Object({
    disk_bytes: Nullable(t.Integer({ description: "What the site's files take on its disk (its filesystem's used space); null when the site has no disk yet or its server does not answer." })),
    disk_limit_bytes: Nullable(t.Integer({ description: "The size of the site's disk: its plan's disk_gb in bytes (GiB); writes past it fail with no space (the files API: 507 DISK_FULL)." })),
  }),
  warnings: t.Array(SiteWarningSchema, { description: 'What needs the owner\'s attention before it goes wrong; empty when nothing does.' }),
  app: Nullable(SiteApp),
  databases: t.Array(SiteDatabase, { description: "Its databases (issue 40) that are not deleted, oldest first; GET /sites/{slug}/databases/ has each one's connection details." }),
})
export type SiteDetailView = Static<typeof SiteDetail>
