/** The deployments area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { DeploymentsRepository } from './repository'
export { Deployer } from './deployer'
export { DeploymentFiles } from './files'
export { DEPLOY_JOB, DeploymentsService } from './service'
export { Deployment } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeDeploymentsRepository(store: Store): DeploymentsRepository {
  return new DeploymentsRepository(store)
}
export { DeploymentEvents } from './deployment-events'
