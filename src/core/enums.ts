import { Type as t, type Static, type TLiteral, type TUnion } from '@sinclair/typebox'

/**
 * The fixed vocabularies of the product, each written once as a schema (validation, OpenAPI,
 * TypeScript types) with its list of values derived from it for config checks and CLI help.
 * Written as explicit unions of literals: Elysia infers route types from these, not from a
 * union built by mapping over an array. The store's `text(..., { enum })` columns use the same lists.
 */
export const TrackSchema = t.Union([t.Literal('single_site'), t.Literal('agency')])
export const HostingTypeSchema = t.Union([t.Literal('shared'), t.Literal('vps'), t.Literal('dedicated')])
export const AiModuleSchema = t.Union([t.Literal('chatbot'), t.Literal('seo'), t.Literal('translation'), t.Literal('content')])
export const ScopeSchema = t.Union([t.Literal('read'), t.Literal('write'), t.Literal('admin')])

export type Track = Static<typeof TrackSchema>
export type HostingType = Static<typeof HostingTypeSchema>
export type AiModule = Static<typeof AiModuleSchema>
export type Scope = Static<typeof ScopeSchema>

/** The values of a union of literals, in order. */
export const valuesOf = <T extends string>(schema: TUnion<TLiteral<T>[]>) => schema.anyOf.map((s) => s.const) as [T, ...T[]]

export const TRACKS = valuesOf(TrackSchema)
export const HOSTING_TYPES = valuesOf(HostingTypeSchema)
export const AI_MODULES = valuesOf(AiModuleSchema)
export const SCOPES = valuesOf(ScopeSchema)

/**
 * Statuses of the store's records. Each list is the `enum` of its drizzle column
 * (src/store/schema/), so a status outside it does not compile, and the API's views use the
 * same schemas. Statuses a view never shows (a site's `deleted`, an archive's `deleted`) are
 * left out of the view's schema, not written twice.
 */
/** The statuses a site shows: every one but `deleted` (a deleted site is not listed and answers not_found). */
export const VisibleSiteStatusSchema = t.Union([t.Literal('provisioning'), t.Literal('active'), t.Literal('suspended'), t.Literal('pending_deletion'), t.Literal('failed')])
export const SiteStatusSchema = t.Union([...VisibleSiteStatusSchema.anyOf, t.Literal('deleted')])
export type SiteStatus = Static<typeof SiteStatusSchema>
export const SITE_STATUSES = valuesOf(SiteStatusSchema)
/** Who suspended a site (sites.suspended_by): billing (unpaid), the admin, or the admin through its account. */
export const SuspenderSchema = t.Union([t.Literal('billing'), t.Literal('admin'), t.Literal('account')])
export type Suspender = Static<typeof SuspenderSchema>
export const SUSPENDERS = valuesOf(SuspenderSchema)

export const CheckoutStatusSchema = t.Union([t.Literal('not_ready'), t.Literal('ready'), t.Literal('awaiting_payment'), t.Literal('in_progress'), t.Literal('completed'), t.Literal('canceled'), t.Literal('failed')])
export type CheckoutStatus = Static<typeof CheckoutStatusSchema>
export const CHECKOUT_STATUSES = valuesOf(CheckoutStatusSchema)

export const BillingPeriodSchema = t.Union([t.Literal('monthly'), t.Literal('annual')])
export type BillingPeriod = Static<typeof BillingPeriodSchema>
export const BILLING_PERIODS = valuesOf(BillingPeriodSchema)

export const PaymentMethodKindSchema = t.Union([t.Literal('processor_checkout'), t.Literal('processor_payment_method')])
export type PaymentMethodKind = Static<typeof PaymentMethodKindSchema>
export const PAYMENT_METHOD_KINDS = valuesOf(PaymentMethodKindSchema)

export const ArchiveKindSchema = t.Union([t.Literal('snapshot'), t.Literal('backup')])
export type ArchiveKind = Static<typeof ArchiveKindSchema>
/**
 * Archives the store keeps: the API's two kinds, and `deployment`, the files a deployment put in
 * place (what a rollback puts back; never listed with snapshots or backups).
 */
export const STORED_ARCHIVE_KINDS = [...valuesOf(ArchiveKindSchema), 'deployment'] as const
export type StoredArchiveKind = (typeof STORED_ARCHIVE_KINDS)[number]
export const ARCHIVE_KINDS = valuesOf(ArchiveKindSchema)
export const VisibleArchiveStatusSchema = t.Union([t.Literal('creating'), t.Literal('ready'), t.Literal('restoring'), t.Literal('failed')])
/** `deleted`: being removed (hidden from the API; its file goes next). */
export const ArchiveStatusSchema = t.Union([...VisibleArchiveStatusSchema.anyOf, t.Literal('deleted')])
export type ArchiveStatus = Static<typeof ArchiveStatusSchema>
export const ARCHIVE_STATUSES = valuesOf(ArchiveStatusSchema)

/**
 * What an app site runs (issue 39): the runtime its live release was detected or declared as.
 * `static` and `php` are trees served by the app image's front (nginx, PHP-FPM); `node`, `bun`
 * and `python` run the release's processes behind it.
 */
export const AppRuntimeSchema = t.Union([t.Literal('node'), t.Literal('bun'), t.Literal('python'), t.Literal('php'), t.Literal('static')])
export type AppRuntime = Static<typeof AppRuntimeSchema>
export const APP_RUNTIMES = valuesOf(AppRuntimeSchema)

/**
 * A managed database's engine (issue 40): Debian 12's PostgreSQL 15, MariaDB 10.11 and Redis 7.0,
 * each in a container of its own on the site's network (domain/databases).
 */
export const DbEngineSchema = t.Union([t.Literal('postgres'), t.Literal('mariadb'), t.Literal('redis')])
export type DbEngineName = Static<typeof DbEngineSchema>
export const DB_ENGINES = valuesOf(DbEngineSchema)

/**
 * A managed database's state: `creating` while its container is made and first answers,
 * `available`, `failed` (error says why; nothing runs), `stopped` (its site suspended), `deleted`
 * (its container removed, its data kept for the site's deletion grace).
 */
export const DbStateSchema = t.Union([t.Literal('creating'), t.Literal('available'), t.Literal('failed'), t.Literal('stopped'), t.Literal('recovering'), t.Literal('deleted')], {
  description: "creating: its server is being set up; available: it answers; failed: it could not be started (error says why; nothing runs and nothing is kept); stopped: its site is suspended or pending deletion (its server stopped, its data kept); recovering: its server stopped answering (its container died or was removed) and Berth is bringing it back on its data; deleted: its server is removed, its data kept for the site's deletion grace.",
})
export type DbState = Static<typeof DbStateSchema>
export const DB_STATES = valuesOf(DbStateSchema)

export const DeploymentStatusSchema = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('succeeded'), t.Literal('failed')])
export type DeploymentStatus = Static<typeof DeploymentStatusSchema>
export const DEPLOYMENT_STATUSES = valuesOf(DeploymentStatusSchema)

export const SubscriptionStatusSchema = t.Union([t.Literal('active'), t.Literal('past_due'), t.Literal('canceled'), t.Literal('ended')])
export type SubscriptionStatus = Static<typeof SubscriptionStatusSchema>
export const SUBSCRIPTION_STATUSES = valuesOf(SubscriptionStatusSchema)

export const PAYMENT_STATUSES = ['pending', 'succeeded', 'failed', 'refunded'] as const
export const PAYMENT_KINDS = ['purchase', 'renewal', 'proration', 'domain'] as const
/** `suspended`: by the hoster (berth accounts suspend); its keys answer 403 until berth accounts resume. */
export const ACCOUNT_STATUSES = ['active', 'suspended', 'anonymized'] as const
/** Why a key stopped working. */
export const KeyRevokedSchema = t.Union([t.Literal('revoked'), t.Literal('rotated')])
export const KEY_REVOKED_REASONS = valuesOf(KeyRevokedSchema)
/** Whether a checkout's new key is still to be shown (`pending`: on the next poll). */
export const API_KEY_STATES = ['none', 'pending', 'delivered'] as const
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const
/** What an off-box copy is of (store/schema/offsite.ts). */
export const OFFSITE_COPY_KINDS = ['archive', 'store', 'tls', 'manifest'] as const
export type OffsiteCopyKind = (typeof OFFSITE_COPY_KINDS)[number]
/** pending: to be put; copied: off the box; deleting: to be deleted off the box. */
export const OFFSITE_COPY_STATUSES = ['pending', 'copied', 'deleting'] as const
export type OffsiteCopyStatus = (typeof OFFSITE_COPY_STATUSES)[number]

export const DnsRecordTypeSchema = t.Union([t.Literal('A'), t.Literal('AAAA'), t.Literal('CNAME'), t.Literal('MX'), t.Literal('TXT'), t.Literal('SRV')])
export type DnsRecordType = Static<typeof DnsRecordTypeSchema>
export const DNS_RECORD_TYPES = valuesOf(DnsRecordTypeSchema)

/** pending: being paid for and registered (a job); active; failed (see `error`, refunded); expired. */
export const DomainStatusSchema = t.Union([t.Literal('pending'), t.Literal('active'), t.Literal('failed'), t.Literal('expired')], {
  description: 'pending: the registration job is paying for and registering it; active: registered, served by Berth DNS; failed: not registered (error says why; any charge was refunded); expired: not renewed in time.',
})
export const DOMAIN_STATUSES = valuesOf(DomainStatusSchema)
/** What an audit record is of (domain/audit/trail.ts): an exec of the API, a console session, an admin's shell, a database's password revealed or rotated. */
export const AUDIT_KINDS = ['exec', 'console', 'shell', 'database'] as const
/** Who ran it: an API key, or the admin on the box. */
export const AUDIT_ACTORS = ['key', 'admin'] as const
/** Whom it ran as inside the container: the site user (uid 1000), or root (the admin's `--user root`). */
export const AUDIT_RUN_AS = ['site', 'root'] as const

/**
 * A cluster node's state (drivers/cluster/types.ts): `joining` from the join until its agent
 * first answers (placement skips it), `down` is set when its agent stops answering.
 */
export const NODE_STATES = ['joining', 'active', 'draining', 'down', 'removed'] as const
export type NodeState = (typeof NODE_STATES)[number]

/**
 * Every type of event Berth records (issue 41; domain/events, docs/api.md "Event types"): here so
 * the store's schema can name them; domain/events/types.ts is where the rest of the code reads them.
 */
export const EventTypeSchema = t.Union([
  t.Literal('site.active'),
  t.Literal('site.provisioning_failed'),
  t.Literal('site.down'),
  t.Literal('site.up'),
  t.Literal('site.suspended'),
  t.Literal('site.resumed'),
  t.Literal('site.deleted'),
  t.Literal('deployment.succeeded'),
  t.Literal('deployment.failed'),
  t.Literal('payment.succeeded'),
  t.Literal('payment.failed'),
  t.Literal('subscription.renewed'),
  t.Literal('subscription.past_due'),
  t.Literal('subscription.canceled'),
  t.Literal('certificate.issued'),
  t.Literal('certificate.renewal_failed'),
  t.Literal('backup.completed'),
  t.Literal('backup.failed'),
  t.Literal('domain.registered'),
  t.Literal('domain.renewal_failed'),
  t.Literal('key.created'),
  t.Literal('key.revoked'),
  t.Literal('database.created'),
  t.Literal('database.deleted'),
  t.Literal('database.down'),
  t.Literal('database.up'),
  t.Literal('app.crashing'),
  t.Literal('app.recovered'),
  t.Literal('webhook_endpoint.disabled'),
], { description: 'What happened (docs/api.md, "Event types").' })
export type EventType = Static<typeof EventTypeSchema>
export const EVENT_TYPES = valuesOf(EventTypeSchema)
