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
})
export type Deployment = Static<typeof Deployment>
