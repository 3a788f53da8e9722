import { t } from 'elysia'
import { CA_LEGAL_TYPES, Domain, DomainRegistered, DomainSearch } from '../../domain/domains'
import { Body, checkedByService, Email, JsonInteger, Query, Text } from '../http/schemas'
import { CA_NAME_PATTERN, DOMAIN_PATTERN } from '../http/name-patterns'
export { Domain, DomainRegistered, DomainSearch }

export const DomainParams = t.Object({
  domain_name: t.String({ maxLength: 300, examples: ['my-shop.ca'], description: 'One of your domains (GET /domains/).' }),
})

/**
 * A domain name to search or register (domain/domains/names.ts): the server lower-cases it,
 * drops a final dot and converts an IDN to its A-label.
 */
const DomainName = (description: string) => t.String({
  examples: ['my-shop.ca'],
  // The service's check (normalizeDomain) is the server's: the pattern is for the document, and
  // the lengths count characters there (the request validator counts UTF-16 code units).
  ...checkedByService({ minLength: 1, maxLength: 300, pattern: DOMAIN_PATTERN }),
  description: `${description} Labels of 1 to 63 letters, digits and hyphens (not at either end), a dot between them, an alphabetic TLD, at most 253 characters; no scheme, path or port.`,
  error: 'is not a domain name: send a name like example.com (labels of letters, digits and hyphens of at most 63 characters, a dot between labels, no scheme, path or port)',
})

export const DomainSearchQuery = Query({
  domain: DomainName('The name to check, like my-shop.ca.'),
})

const ContactText = (description: string, examples: string[], maxLength = 100) => Text({ minLength: 1, maxLength, description, examples })

export const RegisterDomainBody = Body({
  domain: DomainName('The name to register, like my-shop.ca.'),
  period: JsonInteger({ minimum: 1, maximum: 10, default: 1, description: 'Years, 1 to 10.' }),
  ca_legal_type: t.Optional(t.Union(CA_LEGAL_TYPES.map((v) => t.Literal(v)), { description: "Required for .ca names: the owner's CIRA legal type (CCO: Canadian corporation, CCT: Canadian citizen, RES: permanent resident, ...)." })),
  contact: t.Object({
    first_name: ContactText('WHOIS contact first name.', ['Ada']),
    last_name: ContactText('WHOIS contact last name.', ['Lovelace']),
    email: Email({ minLength: 3, examples: ['ada@example.com'] }),
    phone: t.String({ pattern: '^\\+[0-9]{1,3}\\.[0-9]{4,14}$', examples: ['+1.5555551234'], error: "must be +<country code>.<digits>, like +1.5555551234" }),
    address1: ContactText('Street address.', ['100 King St W'], 200),
    city: ContactText('City.', ['Toronto']),
    state: ContactText('Province or state.', ['ON']),
    postal_code: ContactText('Postal code.', ['M5X 1A9'], 20),
    country: t.String({ pattern: '^[A-Z]{2}$', default: 'CA', examples: ['CA'], error: 'must be a two-letter ISO 3166 country code in capitals, like CA' }),
  }, { additionalProperties: false, description: 'Complete WHOIS contact data; every field is required except country (default CA).' }),
}, checkedByService(
  // A .ca name needs its owner's CIRA legal type (DomainsService.register).
  { if: { properties: { domain: { pattern: CA_NAME_PATTERN } }, required: ['domain'] }, then: { required: ['ca_legal_type'], properties: { ca_legal_type: { type: 'string' } } } },
))


export const LinkDomainBody = Body({
  tenant_slug: t.Union([t.String({ maxLength: 100, examples: ['acme-shop'] }), t.Null()], { description: 'The slug of one of your sites; null unlinks the domain.' }),
})

export const DomainSettingsBody = Body({
  auto_renew: t.Optional(t.Boolean({ description: 'Renew a year at a time, 30 days before expiry, with the payment method on file.' })),
  locked: t.Optional(t.Boolean({ description: 'Registrar lock (refuses transfers out).' })),
  privacy: t.Optional(t.Boolean({ description: 'WHOIS privacy.' })),
}, { description: 'Send at least one field; those sent are set.', ...checkedByService({ minProperties: 1 }) })
