/** The tls area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { CertificatesRepository } from './repository'
export { ACME_CHALLENGE_PATH, ChallengeBook } from './challenges'
export { CertificateManager, ISSUE_CERTIFICATE_JOB } from './manager'
export type { ServedCertificate } from './manager'
export { NO_TLS, Tls } from './views'
export type { TlsView } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeCertificatesRepository(store: Store): CertificatesRepository {
  return new CertificatesRepository(store)
}
