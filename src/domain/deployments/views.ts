import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable, Uuid } from '../schema'
import { AppRuntimeSchema, DeploymentStatusSchema } from '../../core/enums'

export const DeploymentSource = t.Object({
  kind: t.Union([t.Literal('archive'), t.Literal('git'), t.Literal('push')], { description: 'archive: a tar.gz or zip sent as the body of deploySite; git: a repository Berth fetched; push: a git push to the site over SSH.' }),
  format: Nullable(t.Union([t.Literal('gzip'), t.Literal('zip')], { description: "An archive's format." })),
  git: Nullable(t.String({ description: 'The repository URL of a git source.' })),
  ref: Nullable(t.String({ description: 'The branch, tag or commit asked for (a push: the branch pushed).' })),
}, { description: 'Where the tree of a deployment with a source came from.' })

export const Deployment = t.Object({
  id: Uuid(),
  site_slug: t.String(),
  status: DeploymentStatusSchema,
  created_at: DateTime(),
  started_at: Nullable(DateTime()),
  finished_at: Nullable(DateTime()),
  output: t.String({ description: "What the web server reload and the site's ~/deploy.sh printed, at most 64 KiB of each." }),
  error: Nullable(t.String({ description: 'Why the deployment failed; null unless status is failed.' })),
  rollback_of: Nullable(Uuid('For a rollback: the earlier deployment whose files it put back; null for a deploy.')),
  files_recorded: t.Boolean({ description: "Whether rollbackDeployment can go back to this deployment: Berth keeps the files it put in place (the site's newest deployments keep theirs), or, for a deployment with a source, its release (the newest 5 that succeeded)." }),
  source: Nullable(DeploymentSource),
  runtime: Nullable(t.Union(AppRuntimeSchema.anyOf, { description: 'What its release runs as (detected or declared in berth.json); null for a deployment without a source.' })),
  commit: Nullable(t.String({ description: 'The commit a git or push deployment built.' })),
})
export type Deployment = Static<typeof Deployment>
