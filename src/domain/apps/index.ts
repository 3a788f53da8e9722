/** The apps area as others see it (issue 39; docs/architecture.md "Apps"): deployments with a source built into releases, run by the supervisor of the app image. */
export { AppDeployer, type AppDeployerDeps, type AppOutcome } from './deploy'
export { planBuild, TreeRefusedError, type BuildPlan, type TreeFacts } from './detect'
export type { AppEnv, AppProcessState, AppSites, AppSources, AppStatusReport, AppSupervisor, DeploySource, GitCommand, SwitchOutcome } from './ports'
export { KEPT_RELEASES, releaseDir, RELEASES_DIR } from './release'
export { AppIntake, ARCHIVE_TYPES, SourceRefusedError, type AppIntakeDeps, type GitSourceInput, type SourceRefusal } from './intake'
export { AppSiteRecords } from './sites'
export { AppStarts } from './starts'
export { AppViews } from './views'
