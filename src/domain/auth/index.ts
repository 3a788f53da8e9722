/** The auth area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { AuthService } from './service'
export { Whoami } from './views'
