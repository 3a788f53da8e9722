import { t } from 'elysia'
import { DateTime, Nullable, Uuid } from '../http/schemas'
import { Deployment } from '../../domain/deployments'
export { Deployment }

export const DeploymentParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }), deployment_id: Uuid() })
