import { Type as t, type Static } from '@sinclair/typebox'
import { AiModuleSchema, AppRuntimeSchema, DbEngineSchema, HostingTypeSchema, TrackSchema as Track } from '../../core/enums'

export const Plan = t.Object({
  slug: t.String({ examples: ['starter'], description: 'Plan identifier, used in SKUs and in /plans/{plan_slug}/.' }),
  name: t.String({ examples: ['Starter'] }),
  track: Track,
  hosting_type: HostingTypeSchema,
  price: t.Object({
    monthly: t.Number({ examples: [9], description: 'CAD per month.' }),
    annual: t.Number({ examples: [90], description: 'CAD per year.' }),
    currency: t.Literal('CAD'),
  }),
  features: t.Object({
    max_sites: t.Integer({ examples: [1] }),
    ai_modules: t.Array(AiModuleSchema),
    free_domain_annual: t.Boolean({ description: 'A first domain is free with annual billing.' }),
    memory_mb: t.Integer({ examples: [512], description: 'Memory limit of each site container.' }),
    cpu_cores: t.Integer({ description: 'CPU limit of each site container.' }),
    disk_gb: t.Integer({ examples: [5], description: 'Disk quota of each site.' }),
    ai_tokens_monthly: t.Integer({
      minimum: 0,
      examples: [100000],
      description: "Model tokens (prompt plus answer) each site may use per UTC month through its AI modules; once spent, model calls answer 429 until the 1st and the chatbot answers by search. 0: the site's modules never call the model.",
    }),
    snapshots: t.Boolean({ description: 'On-demand snapshots (vps and dedicated).' }),
    ssh: t.Boolean({ description: 'SSH access (vps and dedicated).' }),
    runtimes: t.Array(AppRuntimeSchema, {
      description: "What a site of the plan may run when it deploys a source (docs/api.md, Apps): every plan runs each of them, within its memory_mb, cpu_cores and disk_gb. git push needs ssh.",
    }),
    databases: t.Object({
      max: t.Integer({ minimum: 0, examples: [1], description: 'Databases a site of the plan may have at once (a deleted one in its grace does not count).' }),
      engines: t.Array(DbEngineSchema, { description: 'The engines it may create.' }),
      memory_mb: t.Integer({ examples: [256], description: "Memory limit of EACH database, on top of the site's memory_mb; each may use up to cpu_cores." }),
      disk_gb: t.Integer({ examples: [1], description: "Disk of EACH database, on top of the site's disk_gb." }),
    }, { description: 'Managed databases (docs/api.md, Databases).' }),
  }),
  skus: t.Object({
    monthly: t.String({ examples: ['svc_starter_monthly'], description: 'The SKU to check out with monthly billing.' }),
    annual: t.String({ examples: ['svc_starter_annual'], description: 'The SKU to check out with annual billing.' }),
  }),
  deprecated: t.Boolean({ description: 'Deprecated plans cannot be bought; they are listed only with include_deprecated=true.' }),
})
export type Plan = Static<typeof Plan>
