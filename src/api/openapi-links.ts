/**
 * OpenAPI links (3.1 section 4.8.20) of the main flows, so that stateful testers and agents can
 * follow an answer to the next call: buy (create a checkout, name the site, pay, then the site),
 * keys (create, then revoke or rotate), domains (register, then read). Attached to every success
 * answer of the operation named; openapi.test.ts holds that each target and parameter exists.
 */

interface Link {
  operationId: string
  parameters: Record<string, string>
  description: string
}

const checkout = (operationId: string, description: string, secret = '$response.body#/data/checkout_secret'): Link => ({
  operationId, description, parameters: { checkout_id: '$response.body#/data/id', checkout_secret: secret },
})
const key = (operationId: string, description: string): Link => ({ operationId, description, parameters: { key_id: '$response.body#/data/key_id' } })

export const LINKS: Record<string, Record<string, Link>> = {
  createCheckout: {
    UpdateCheckout: checkout('updateCheckout', 'Name the site (requested_slug) and the buyer; the session becomes ready.'),
    CompleteCheckout: checkout('completeCheckout', 'Pay a ready session.'),
    GetCheckout: checkout('getCheckout', 'Poll the session.'),
    CancelCheckout: checkout('cancelCheckout', 'Cancel the session before paying.'),
  },
  updateCheckout: {
    // The answer does not repeat the secret: the one the update was sent with.
    CompleteCheckout: checkout('completeCheckout', 'Pay the session once it is ready.', '$request.query.checkout_secret'),
    GetCheckout: checkout('getCheckout', 'Poll the session.', '$request.query.checkout_secret'),
  },
  completeCheckout: {
    GetSite: { operationId: 'getSite', parameters: { tenant_slug: '$response.body#/data/site_slug' }, description: 'The site being provisioned (201: paid); send the api_key of the answer as the bearer key, and poll until its status is active.' },
    GetCheckout: checkout('getCheckout', 'Poll a session that waits for the hosted payment page (200).', '$request.query.checkout_secret'),
  },
  createSite: {
    GetSite: { operationId: 'getSite', parameters: { tenant_slug: '$response.body#/data/slug' }, description: 'Poll the new site until its status is active.' },
  },
  register: {
    RevokeKey: key('revokeKey', 'Revoke the first key of the account.'),
    RotateKey: key('rotateKey', 'Replace the first key with a new one.'),
  },
  createKey: {
    RevokeKey: key('revokeKey', 'Revoke the new key.'),
    RotateKey: key('rotateKey', 'Replace the new key with another, revoking it.'),
  },
  rotateKey: {
    RevokeKey: key('revokeKey', 'Revoke the replacement key.'),
    RotateKey: key('rotateKey', 'Rotate the replacement key again.'),
  },
  registerDomain: {
    GetDomain: { operationId: 'getDomain', parameters: { domain_name: '$response.body#/data/domain' }, description: 'The registered domain, its expiry and settings.' },
    ListDomainDns: { operationId: 'listDomainDns', parameters: { domain_name: '$response.body#/data/domain' }, description: "The domain's DNS records." },
    LinkDomain: { operationId: 'linkDomain', parameters: { domain_name: '$response.body#/data/domain' }, description: 'Route the domain to one of your sites.' },
  },
}
