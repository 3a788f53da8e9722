import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable, Uuid } from '../schema'
import { DeploymentStatusSchema } from '../../core/enums'

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
  files_recorded: t.Boolean({ description: "Whether Berth keeps the files this deployment put in place, so rollbackDeployment can put them back (the site's newest deployments keep theirs)." }),
})
export type Deployment = Static<typeof Deployment>
