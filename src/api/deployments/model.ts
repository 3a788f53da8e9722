import { t, type Static } from 'elysia'
import { DateTime, Nullable, Uuid } from '../http/schemas'
import { Deployment } from '../../domain/deployments/views'
export { Deployment }

export const DeploymentStatusSchema = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('succeeded'), t.Literal('failed')])
export type DeploymentStatus = Static<typeof DeploymentStatusSchema>

export const DeploymentParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }), deployment_id: Uuid() })
