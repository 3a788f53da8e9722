/** The tls area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { ACME_CHALLENGE_PATH, ChallengeBook } from './challenges'
export { CertificateManager, ISSUE_CERTIFICATE_JOB } from './manager'
export type { ServedCertificate } from './manager'
export { NO_TLS, Tls } from './views'
export type { TlsView } from './views'
