/** The ssh area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { SshService } from './service'
export { SshGitPush, SshHostKey, SshInfo, SshKeyAdded, SshKeyView } from './views'
