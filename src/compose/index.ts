/**
 * What the rest of the program takes from the composition root besides buildApp (compose/app.ts):
 * the installation's paths and secrets, and the background upkeep's passes. The areas' builder
 * (compose/areas.ts) is compose/'s own: nothing outside src/compose/ imports it.
 */
export { databasePath, readInstanceId, secretFilesOf } from './installation'
export { followContainerEvents, followNodeHealth, runMaintenance, type ContainerEventDeps, type MaintenanceDeps } from './upkeep'
export type { BuildOptions } from './core'
