import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable } from '../schema'

/** A name's certificate as agents see it (design.md, Certificates), in the site and domain views. */
export const Tls = t.Object({
  status: t.Union([t.Literal('none'), t.Literal('pending'), t.Literal('active'), t.Literal('renewing'), t.Literal('failed')], {
    description: 'none: no certificate is wanted (HTTPS is not configured on this server). pending: being obtained. active: served over HTTPS. renewing: served, a new one being obtained. failed: none could be obtained; last_error says why and it is retried later.',
  }),
  names: t.Array(t.String(), { description: 'The names the certificate covers (a wildcard covers every site name).' }),
  not_after: Nullable(DateTime('When the certificate served now expires; it is renewed well before.')),
  last_error: Nullable(t.String({ description: 'Why the last attempt failed; null once one succeeds.' })),
})
export type TlsView = Static<typeof Tls>

export const NO_TLS: TlsView = { status: 'none', names: [], not_after: null, last_error: null }
