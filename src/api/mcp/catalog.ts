/**
 * What the MCP server offers besides its tools, as plain data: the session server (sdk.ts) serves
 * it and the server card (/.well-known/mcp.json) describes it, without loading the SDK.
 */

export const SERVER_TITLE = 'Berth hosting'

export const CAPABILITIES = { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false }, prompts: { listChanged: false }, logging: {}, completions: {} }

export const INSTRUCTIONS = `Berth sells and runs web hosting for agents. Flow: list_plans; register (gives an API key; send it as "Authorization: Bearer <key>" on the MCP HTTP requests); create_checkout with a SKU; update_checkout with requested_slug (and buyer_email); complete_checkout with payment_method "processor_payment_method" and payment_method_id (pm_card_visa in test mode); poll get_site until status is active; then write_file, deploy_site, get_site_logs and the other site tools. Every tool mirrors one REST route; errors come back with isError and the API's code, message and param, and say what to do next.`

export const RESOURCES = [
  { uri: 'berth://plans', name: 'plans', title: 'Hosting plans', description: 'The plans on sale, with prices in CAD, limits, features and SKUs (list_plans).', mimeType: 'application/json', tool: 'list_plans', args: {} },
  { uri: 'berth://sites', name: 'sites', title: 'Your sites', description: "The caller's sites with status, plan and URL (list_sites; needs a key).", mimeType: 'application/json', tool: 'list_sites', args: {} },
]

export const PROMPTS = [
  {
    name: 'buy_a_site',
    title: 'Buy a hosting site',
    description: 'Walks through registering, choosing a plan, checking out and waiting for the site to run.',
    arguments: [
      { name: 'slug', description: 'The site name you want (3 to 50 lowercase letters, digits and hyphens).', required: true },
      { name: 'plan', description: 'A plan slug from list_plans (default: starter).', required: false },
    ],
    text: (a: Record<string, string>) => `Buy a Berth hosting site named "${a.slug}" on the ${a.plan || 'starter'} plan, monthly.
1. If you have no API key: call register, keep data.api_key, and send it as "Authorization: Bearer <key>" from now on.
2. Call list_plans and pick the SKU of the plan (skus.monthly).
3. Call create_checkout with that sku; keep id and checkout_secret.
4. Call update_checkout with checkout_id, checkout_secret and requested_slug "${a.slug}".
5. Call complete_checkout with checkout_id, checkout_secret, payment_method "processor_payment_method" and payment_method_id (pm_card_visa works in test mode).
6. Poll get_site with tenant_slug "${a.slug}" until status is "active"; its url is the site.`,
  },
  {
    name: 'deploy_to_site',
    title: 'Put content on a site',
    description: "Writes a page into a site's web root, deploys, and checks the result in the logs.",
    arguments: [{ name: 'tenant_slug', description: 'The slug of one of your sites (list_sites).', required: true }],
    text: (a: Record<string, string>) => `Publish content on the site "${a.tenant_slug}".
1. Call write_file with tenant_slug "${a.tenant_slug}", path "public/index.html" and the page's HTML as content (upload_file takes base64 for binary files).
2. Call deploy_site with tenant_slug "${a.tenant_slug}"; poll get_deployment until its status is succeeded or failed.
3. Open the site's url (get_site) to check the page, then call get_site_logs with type "access" to see the request, or "error" if something failed.`,
  },
]

/** The event log as a resource (api/mcp/events.ts): read for the newest events, subscribe to hear of each new one. */
export const EVENTS_RESOURCE = { uri: 'berth://events', name: 'events', title: 'Your events', description: "The newest events of the caller's account (a site-scoped key: its site's). Subscribe (resources/subscribe) to get notifications/resources/updated as each is recorded while the session is open; list_events with after= reads exactly what is new.", mimeType: 'application/json' }
export const SITE_EVENTS_TEMPLATE = { uriTemplate: 'berth://sites/{tenant_slug}/events', name: 'site-events', title: "One site's events", description: "The newest events of one of your sites; subscribable like berth://events.", mimeType: 'application/json' }

export const SITE_TEMPLATE = { uriTemplate: 'berth://sites/{tenant_slug}', name: 'site', title: 'One of your sites', description: 'A site by its slug (get_site; needs a key).', mimeType: 'application/json' }
