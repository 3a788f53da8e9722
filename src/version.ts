import pkg from '../package.json' with { type: 'json' }

/** Version of this build, from package.json (embedded in the binary at build time). */
export const VERSION: string = pkg.version
