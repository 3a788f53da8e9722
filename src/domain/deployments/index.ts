/** The deployments area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { Deployer } from './deployer'
export { DeploymentFiles } from './files'
export { DEPLOY_JOB, DeploymentsService } from './service'
export { Deployment } from './views'
