import type { Store } from '../../store/store'
import { MarkedMoves } from './marked-moves-repository'
import { NodesRepository } from './repository'

/** The cluster area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { HEALTH_INTERVAL_MS, NodeHealth } from './health'
export type { NodeHealthDeps } from './health'
export { InvalidJoinTokenError, JoinService, NodeNameTakenError, issueJoinToken } from './join'
export { SiteMover } from './move'
export { MOVE_RESTORE_JOB, MoveRestoreJob } from './move-restore'
export { NodesService } from './nodes'
export { publicAddressProblem } from './public-address'
export { MOVE_SITE_JOB, MoveMarkHandler, SiteTransfer } from './site-transfer'
export type { EdgeProbe } from './site-transfer'
export type { DrainView, EvacuationView, MoveView, NodeView } from './views'
export type { DrainStep, EvacuationStep, MoveStep, NodeStep, OnStep } from './steps'

/** The composition root's (and the offline commands') way to the nodes' repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeNodesRepository(store: Store): NodesRepository {
  return new NodesRepository(store)
}

/** The moves marked for the edge (marked-moves-repository.ts), made by the composition root. */
export function makeMarkedMoves(store: Pick<Store, 'sqlite' | 'versionOf'>): MarkedMoves {
  return new MarkedMoves(store)
}
