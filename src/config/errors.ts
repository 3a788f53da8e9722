/** A configuration that cannot be used: the message names the key or file and what to write instead. */
export class ConfigError extends Error {}
