import { t, type Static } from 'elysia'
import { DateTime, Nullable, Uuid } from '../http/schemas'

export const DeploymentStatusSchema = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('succeeded'), t.Literal('failed')])
export type DeploymentStatus = Static<typeof DeploymentStatusSchema>

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

export const DeploymentParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }), deployment_id: Uuid() })
