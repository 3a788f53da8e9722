/**
 * The two readable discovery pages: `/for-agents` (the buying flow with its exact requests) and
 * `/agent-native/` (what a site comes with, the plans, the terms). Plain HTML and inline CSS, no
 * scripts and nothing fetched from elsewhere; every value from the config or catalog is escaped.
 */
import type { Plan } from '../../domain/plans'
import { html, Html } from '../../lib/html'
import { linksOf, money, type DiscoveryFacts } from './documents'

const STYLE = `body{font:16px/1.55 system-ui,sans-serif;color:#1d232a;max-width:56rem;margin:0 auto;padding:1.5rem 1rem 4rem}
header{display:flex;align-items:center;gap:.75rem;border-bottom:1px solid #dde3ea;padding-bottom:1rem}
header img{width:40px;height:40px}header nav{margin-left:auto;display:flex;gap:1rem;flex-wrap:wrap}
a{color:#0b5cad}h1{margin:.2rem 0;font-size:1.6rem}h2{margin-top:2.2rem;font-size:1.25rem}
code,pre{font:14px/1.45 ui-monospace,monospace;background:#f3f5f8;border-radius:4px}code{padding:.1rem .3rem}
pre{padding:.8rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;width:100%;font-size:15px}th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid #e6eaef;vertical-align:top}
.notice{background:#fff6d6;border:1px solid #f0d67a;border-radius:6px;padding:.6rem .9rem}
.plans{display:grid;grid-template-columns:repeat(auto-fill,minmax(15rem,1fr));gap:1rem}
.plan{border:1px solid #dde3ea;border-radius:8px;padding:1rem}.plan h3{margin:0}.price{font-size:1.4rem;font-weight:600}
.muted{color:#5b6672}ol li{margin:.4rem 0}footer{margin-top:3rem;color:#5b6672;font-size:14px}`

/** Headers of both pages: HTML, cacheable, and a policy that allows nothing but this page. */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

function layout(f: DiscoveryFacts, title: string, body: Html): string {
  const l = linksOf(f)
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title}</title><meta name="description" content="${f.brand.name}: web hosting that AI agents buy and run through an API or MCP.">
<link rel="icon" type="image/svg+xml" href="${l.logo}"><link rel="alternate" type="text/plain" href="${l.llms}" title="llms.txt"><link rel="service-desc" type="application/json" href="${l.openapi}">
<style>${new Html(STYLE)}</style></head>
<body><header><img src="${l.logo}" alt=""><div><strong>${f.brand.name}</strong><div class="muted">${title}</div></div>
<nav><a href="${l.forAgents}">For agents</a><a href="${l.agentNative}">Agent-native hosting</a><a href="${l.reference}">API reference</a><a href="${l.llms}">llms.txt</a></nav></header>
${f.testMode ? html`<p class="notice" role="note"><strong>Test mode.</strong> No real money moves: pay with <code>pm_card_visa</code> (or card 4242 4242 4242 4242 on the payment page).</p>` : ''}
${body}
<footer>${f.brand.name} ${f.version} · region ${f.region} · ${f.provider} · <a href="mailto:${f.brand.contactEmail}">${f.brand.contactEmail}</a></footer>
</body></html>
`.text
}

/** `/for-agents`: the flow, step by step, with the requests an agent sends and what it keeps. */
export function forAgentsPage(f: DiscoveryFacts): string {
  const l = linksOf(f)
  const sku = f.plans[0]?.skus.monthly ?? 'svc_starter_monthly'
  const pm = f.testMode ? (f.testPaymentMethods[0] ?? 'pm_card_visa') : '<your payment method id>'
  const step = (title: string, request: string, keep: string | Html) => html`<li><strong>${title}</strong><pre>${request}</pre><p class="muted">${keep}</p></li>`
  return layout(f, 'For agents', html`
<h1>Buy and run a website, by API alone</h1>
<p>${f.brand.name} sells web hosting to AI agents. Everything is an HTTP/JSON call under <code>${f.baseUrl}</code>, or the same call as a tool of the MCP server at <code>${l.mcp}</code>. Every answer is <code>{"ok": true, "data": …, "meta": …}</code> or <code>{"ok": false, "error": {"code", "message", "param"}}</code>, and each error's message names the call that fixes it.</p>
<h2 id="flow">The flow</h2>
<ol>
${step('List the plans (MCP: list_plans)', `GET ${l.plans}`, html`Pick a plan; its <code>skus.monthly</code> or <code>skus.annual</code> is what you buy.`)}
${step('Register (register)', `POST ${l.register}\n{"name": "my agent"}`, html`Keep <code>data.api_key</code>: it is shown once. Send it as <code>Authorization: Bearer &lt;key&gt;</code> from now on.`)}
${step('Open a checkout (create_checkout)', `POST ${l.checkouts}\n{"sku": "${sku}"}`, html`Keep <code>data.id</code> and <code>data.checkout_secret</code>; the calls below send the secret.`)}
${step('Name the site (update_checkout)', `POST ${l.checkouts}{id}/update/?checkout_secret={secret}\n{"requested_slug": "my-site"}`, '3 to 50 lowercase letters, digits and hyphens; the answer says when a name is taken.')}
${step('Pay (complete_checkout)', `POST ${l.checkouts}{id}/complete/?checkout_secret={secret}\n{"payment_method": "processor_payment_method", "payment_method_id": "${pm}"}`, html`201 with <code>status: completed</code>: the site is being provisioned. With <code>"payment_method": "processor_checkout"</code> you get a payment page for a person instead.`)}
${step('Wait for the site (get_site)', `GET ${l.sites}my-site/`, html`Poll until <code>status</code> is <code>active</code>; <code>url</code> serves it.`)}
${step('Publish (write_file, deploy_site)', `POST ${l.sites}my-site/files/write/\n{"path": "public/index.html", "content": "<h1>Hello</h1>"}`, 'Then read the access log (get_site_logs) to see the first visits.')}
</ol>
<h2 id="plans">Plans and SKUs</h2>
<table><thead><tr><th>Plan</th><th>Monthly</th><th>Annual</th><th>Limits</th></tr></thead><tbody>
${f.plans.map((p) => html`<tr><td><strong>${p.name}</strong><br><code>${p.slug}</code> · ${p.hosting_type}</td><td>${money(p.price.monthly)} CAD<br><code>${p.skus.monthly}</code></td><td>${money(p.price.annual)} CAD<br><code>${p.skus.annual}</code></td><td>${limits(p)}</td></tr>`)}
</tbody></table>
<h2 id="documents">Machine-readable documents</h2>
<ul>
<li><a href="${l.openapi}">OpenAPI document</a>: every route, schema and error answer.</li>
<li><a href="${l.mcpCard}">MCP server card</a>: the endpoint <code>${l.mcp}</code> (Streamable HTTP, bearer key), its tools, resources and prompts.</li>
<li><a href="${l.acp}">ACP discovery</a>: checkout endpoints, SKUs, payment methods, test mode.</li>
<li><a href="${l.pricing}">Pricing</a>: every SKU and price.</li>
<li><a href="${l.llms}">llms.txt</a> and the <a href="${l.aiPlugin}">plugin manifest</a>.</li>
</ul>`)
}

/** `/agent-native/`: what a site comes with, the plans, how agents use it, and the terms. */
export function agentNativePage(f: DiscoveryFacts): string {
  const l = linksOf(f)
  return layout(f, 'Agent-native hosting', html`
<h1>Hosting built for agents, not for dashboards</h1>
<p>An agent finds ${f.brand.name} from its address, buys a site and runs it without a person: no sign-up form, no e-mail confirmation, no console. The same operations are an <a href="${l.openapi}">HTTP/JSON API</a> and an MCP server at <code>${l.mcp}</code>.</p>
<h2 id="what">What every site gets</h2>
<ul>
<li>Its own container with memory, CPU and disk limits, behind ${f.brand.name}'s edge at <code>{slug}.${f.sitesDomain}</code>.</li>
<li>Files (read, write, upload, move), deploys, access and error logs, and traffic metrics.</li>
<li>Automatic backups (the last ${f.backupsKept} kept); snapshots and SSH on VPS and dedicated plans.</li>
<li>Keys with scopes (read, write, admin) and a claim flow to recover access through the site's own files.</li>
<li>A container that stops or dies is brought back in about a second.</li>
</ul>
<h2 id="plans">Plans</h2>
<div class="plans">
${f.plans.map((p) => html`<section class="plan"><h3>${p.name}</h3><p class="muted">${p.track === 'agency' ? 'Agency' : 'Single site'} · ${p.hosting_type}</p><p class="price">${money(p.price.monthly)} CAD<span class="muted"> / month</span></p><p class="muted">or ${money(p.price.annual)} CAD a year</p><p>${limits(p)}</p><p><code>${p.skus.monthly}</code></p></section>`)}
</div>
<h2 id="how">How an agent buys</h2>
<p>Read <a href="${l.forAgents}">For agents</a> for the requests, or connect an MCP client to <code>${l.mcp}</code> and use the <code>buy_a_site</code> prompt.</p>
<h2 id="terms">Terms</h2>
<ul>
<li>Prices are in Canadian dollars, billed monthly or yearly from the day of purchase.</li>
<li>A deleted site is kept for 7 days and can be restored in that time; then its files are gone.</li>
<li>Payments go through the configured processor${f.testMode ? html`; this server is in <strong>test mode</strong> and takes no real money` : ''}.</li>
<li>Questions: <a href="mailto:${f.brand.contactEmail}">${f.brand.contactEmail}</a>.</li>
</ul>`)
}

function limits(p: Plan): string {
  const sites = p.features.max_sites === 1 ? '1 site' : `up to ${p.features.max_sites} sites`
  const extra = [p.features.ssh && 'SSH', p.features.snapshots && 'snapshots', p.features.ai_modules.length > 0 && `AI: ${p.features.ai_modules.join(', ')}`].filter(Boolean).join(', ')
  return `${sites}, ${p.features.memory_mb} MB memory, ${p.features.cpu_cores} CPU, ${p.features.disk_gb} GB disk${extra ? `; ${extra}` : ''}`
}

/** The logo of the manifest, the server card and the pages: a berth's mooring post. */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64"><rect width="64" height="64" rx="14" fill="#0b5cad"/><path d="M14 40h36l-6 10H20z" fill="#fff"/><rect x="30" y="12" width="4" height="26" fill="#fff"/><path d="M34 14l14 10H34z" fill="#9cc8f5"/></svg>
`
