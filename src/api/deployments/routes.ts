import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { Deployment, DeploymentParams } from './model'
import type { DeploymentsService } from '../../domain/deployments'

const tags = ['Deployments']

export const deploymentRoutes = (plugins: ApiPlugins, deployments: DeploymentsService) =>
  new Elysia({ name: 'deployment-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/deploy/', ({ site }) => deployments.trigger(site), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: NoBody,
      response: ok(Deployment),
      detail: { tags, summary: "Reload the site's web server and run its ~/deploy.sh, in the background", operationId: 'deploySite' },
    })
    .post('/sites/:tenant_slug/deployments/:deployment_id/rollback/', ({ site, params }) => deployments.rollback(site, params.deployment_id), {
      scope: 'write',
      site: 'changeable',
      params: DeploymentParams,
      body: NoBody,
      response: ok(Deployment),
      detail: { tags, summary: 'Put back the files an earlier deployment recorded, as a new deployment (reload and ~/deploy.sh follow), in the background', operationId: 'rollbackDeployment' },
    })
    .get('/sites/:tenant_slug/deployments/', ({ site }) => deployments.list(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(Deployment)),
      detail: { tags, summary: "The site's deployments, newest first", operationId: 'listDeployments' },
    })
    .get('/sites/:tenant_slug/deployments/:deployment_id/', ({ site, params }) => deployments.get(site, params.deployment_id), {
      scope: 'read',
      site: 'owned',
      params: DeploymentParams,
      response: ok(Deployment),
      detail: { tags, summary: 'One deployment, with its output', operationId: 'getDeployment' },
    })
