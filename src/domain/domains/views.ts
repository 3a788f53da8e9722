import { Tls } from '../tls'
import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable } from '../schema'
import { DomainStatusSchema } from '../../core/enums'

const Cad = (description: string) => t.Number({ description: `${description} CAD.`, examples: [18] })

export const DomainSearch = t.Object({
  domain: t.String({ examples: ['my-shop.ca'] }),
  available: t.Boolean({ description: 'Whether it can be registered now.' }),
  premium: t.Boolean({ description: 'A premium name: the registry charges more than the usual price.' }),
  price: t.Object({
    registration: Cad('One year of registration, in'),
    renewal: Cad('One year of renewal, in'),
    currency: t.Literal('CAD'),
  }),
  first_year_free: t.Boolean({ description: "True when your plan (billed annually, with free_domain_annual) makes this account's first domain free for its first year." }),
  sandbox: t.Boolean({ description: 'True when the registrar is the sandbox: nothing is registered for real.' }),
})
export type DomainSearchView = Static<typeof DomainSearch>

export const Domain = t.Object({
  domain: t.String({ examples: ['my-shop.ca'] }),
  status: DomainStatusSchema,
  error: Nullable(t.String({ description: 'Why the registration failed (status failed: nothing was registered and any charge was refunded); null otherwise.' })),
  expires_at: Nullable(DateTime('When the registration ends; null until it is registered (status pending) and for a failed registration.')),
  auto_renew: t.Boolean(),
  locked: t.Boolean({ description: 'Registrar lock: transfers out are refused while on.' }),
  privacy: t.Boolean({ description: "WHOIS privacy: the contact's details are hidden in WHOIS." }),
  nameservers: t.Array(t.String()),
  linked_site: Nullable(t.String({ description: 'The slug of the site the domain (and its www) is routed to.' })),
  renewal_price: Cad('One year of renewal, charged to the payment method on file, in'),
  registrar: t.String({ examples: ['sandbox'] }),
  sandbox: t.Boolean({ description: 'True when nothing was registered for real (the sandbox registrar).' }),
  tls: Tls,
  renew_error: Nullable(t.String({ description: 'Why the last automatic renewal failed, while it does.' })),
  created_at: DateTime(),
})
export type DomainView = Static<typeof Domain>

export const DomainRegistered = t.Object({
  ...Domain.properties,
  charged: Cad('What this registration charges to the payment method on file (0 for a free first year; refunded if it fails), in'),
})
export type DomainRegisteredView = Static<typeof DomainRegistered>
