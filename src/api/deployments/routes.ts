import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { Deployment, DeploymentParams } from './model'
import type { DeploymentsService } from './service'

const tags = ['Deployments']

export const deploymentRoutes = (plugins: ApiPlugins, deployments: DeploymentsService) =>
  new Elysia({ name: 'deployment-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/deploy/', ({ principal, params }) => deployments.trigger(principal, params.tenant_slug), {
      scope: 'write',
      params: SiteParams,
      body: NoBody,
      response: ok(Deployment),
      detail: { tags, summary: "Reload the site's web server and run its ~/deploy.sh, in the background", operationId: 'deploySite' },
    })
    .get('/sites/:tenant_slug/deployments/', ({ principal, params }) => deployments.list(principal, params.tenant_slug), {
      scope: 'read',
      params: SiteParams,
      response: ok(t.Array(Deployment)),
      detail: { tags, summary: "The site's deployments, newest first", operationId: 'listDeployments' },
    })
    .get('/sites/:tenant_slug/deployments/:deployment_id/', ({ principal, params }) => deployments.get(principal, params.tenant_slug, params.deployment_id), {
      scope: 'read',
      params: DeploymentParams,
      response: ok(Deployment),
      detail: { tags, summary: 'One deployment, with its output', operationId: 'getDeployment' },
    })
