import { Html, html } from '../../lib/html'
import { formatCad } from '../../core/money'
import type { PortalData, ReceiptData } from './types'

const WORDS = {
  en: {
    title: 'Billing', banner: 'TEST MODE: no real money moves. Use a test card.', cardOnFile: 'Card on file', none: 'None yet',
    replace: 'Replace the card', cardNumber: 'Card number', expiry: 'Expiry (MM/YY)', cvc: 'CVC', save: 'Save card',
    testCards: 'Test cards: 4242 4242 4242 4242 pays, 4000 0000 0000 0002 is declined. Any future expiry and any 3-digit CVC.',
    subscriptions: 'Subscriptions', plan: 'Plan', status: 'Status', amount: 'Amount', renews: 'Renews', ends: 'Ends', sites: 'Sites',
    cancel: 'Cancel at period end', resume: 'Keep it (undo cancel)', payments: 'Payments and receipts', date: 'Date', what: 'What',
    method: 'Method', receipt: 'Receipt', noPayments: 'No payments yet.', noSubscriptions: 'No subscriptions.', expires: 'This link works until',
    receiptTitle: 'Receipt', paid: 'Paid', reference: 'Reference', account: 'Account', testReceipt: 'Test mode receipt: no money was charged.',
    back: 'Back to billing', expired: 'This billing link has expired or is not valid. Ask for a new one: GET /api/v1/account/billing-portal/.',
    lastError: 'Last charge declined:',
    status_active: 'active', status_past_due: 'past due', status_canceled: 'canceled', status_ended: 'ended',
    pay_succeeded: 'paid', pay_failed: 'declined', pay_pending: 'processing', pay_refunded: 'refunded',
  },
  fr: {
    title: 'Facturation', banner: 'MODE TEST : aucun argent réel. Utilisez une carte de test.', cardOnFile: 'Carte enregistrée', none: 'Aucune',
    replace: 'Remplacer la carte', cardNumber: 'Numéro de carte', expiry: 'Expiration (MM/AA)', cvc: 'CVC', save: 'Enregistrer la carte',
    testCards: 'Cartes de test : 4242 4242 4242 4242 paie, 4000 0000 0000 0002 est refusée. Toute date future et tout CVC à 3 chiffres.',
    subscriptions: 'Abonnements', plan: 'Forfait', status: 'État', amount: 'Montant', renews: 'Renouvellement', ends: 'Fin', sites: 'Sites',
    cancel: 'Annuler à la fin de la période', resume: "Le garder (annuler l'annulation)", payments: 'Paiements et reçus', date: 'Date', what: 'Objet',
    method: 'Moyen', receipt: 'Reçu', noPayments: 'Aucun paiement.', noSubscriptions: 'Aucun abonnement.', expires: "Ce lien est valide jusqu'au",
    receiptTitle: 'Reçu', paid: 'Payé', reference: 'Référence', account: 'Compte', testReceipt: "Reçu en mode test : aucun montant n'a été prélevé.",
    back: 'Retour à la facturation', expired: "Ce lien de facturation a expiré ou n'est pas valide. Demandez-en un nouveau : GET /api/v1/account/billing-portal/.",
    lastError: 'Dernier prélèvement refusé :',
    status_active: 'actif', status_past_due: 'en retard de paiement', status_canceled: 'annulé', status_ended: 'terminé',
    pay_succeeded: 'payé', pay_failed: 'refusé', pay_pending: 'en cours', pay_refunded: 'remboursé',
  },
} as const
type Words = Record<keyof typeof WORDS.en, string>

const word = (w: Words, key: string): string => (w as Record<string, string>)[key] ?? key
/** Dates as ISO days (2026-12-25), the same in both languages. */
const when = (ms: number, _lang: 'en' | 'fr') => new Date(ms).toISOString().slice(0, 10)

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;margin:0;color:#1d2330}
.banner{background:#ffb020;color:#1d2330;text-align:center;padding:.5rem;font-weight:600;letter-spacing:.03em}
main{max-width:52rem;margin:2rem auto;background:#fff;border-radius:12px;padding:1.5rem 2rem;box-shadow:0 2px 12px #0001}
section{margin-top:1.5rem}h2{font-size:1.15rem;margin:.2rem 0 .6rem}
label{display:block;margin-top:.8rem;font-size:.9rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #c7ccd6;border-radius:6px;font-size:1rem}
.row{display:flex;gap:1rem}.row>div{flex:1}.card{max-width:26rem}
button{margin-top:1rem;padding:.6rem 1rem;border:0;border-radius:6px;background:#3056d3;color:#fff;font-size:.95rem;font-weight:600;cursor:pointer}
button.secondary{background:#eef0f4;color:#1d2330;margin:0}
table{width:100%;border-collapse:collapse;font-size:.92rem}th,td{text-align:left;padding:.45rem .4rem;border-bottom:1px solid #eceef2;vertical-align:top}
.muted{color:#5b6475;font-size:.9rem}.error{color:#b42318;min-height:1.4rem;margin-top:.6rem}.notice{background:#e7f6ec;color:#067647;padding:.6rem .8rem;border-radius:6px}
.status-past_due,.pay-failed{color:#b42318;font-weight:600}.status-active,.pay-succeeded{color:#067647}`

function page(lang: 'en' | 'fr', title: string, testMode: boolean, body: Html): string {
  const w: Words = WORDS[lang]
  return html`<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}${testMode ? ' (test mode)' : ''}</title><style>${new Html(STYLE)}</style></head>
<body>${testMode ? html`<div class="banner" role="note">${w.banner}</div>` : ''}<main>${body}</main></body></html>`.text
}

/** The built-in processor's billing portal: card on file, subscriptions (cancel, resume), payments with receipts. */
export function renderPortal(d: PortalData, opts: { csrf: string; error?: string; notice?: string; focusCard?: boolean }): string {
  const w: Words = WORDS[d.language]
  const base = `/billing/portal/${d.token}/`
  const card = html`<section id="card" class="card"><h2>${w.cardOnFile}</h2>
<p data-testid="method">${d.method ?? w.none}</p>
<form id="card-form" method="post" action="${base}card" novalidate>
<input type="hidden" name="csrf" value="${opts.csrf}">
<label for="card-number">${w.cardNumber}</label><input id="card-number" name="card" inputmode="numeric" autocomplete="cc-number" placeholder="4242 4242 4242 4242" required${opts.focusCard ? html` autofocus` : ''}>
<div class="row"><div><label for="exp">${w.expiry}</label><input id="exp" name="exp" placeholder="12/34" autocomplete="cc-exp" required></div>
<div><label for="cvc">${w.cvc}</label><input id="cvc" name="cvc" inputmode="numeric" placeholder="123" autocomplete="cc-csc" required></div></div>
<button id="save-card" type="submit">${w.save}</button>
<div class="error" role="alert" data-testid="error">${opts.error ?? ''}</div>
</form><p class="muted">${w.testCards}</p></section>`
  const subscriptions = d.subscriptions.length === 0 ? html`<p class="muted">${w.noSubscriptions}</p>` : html`<table><thead><tr><th>${w.plan}</th><th>${w.status}</th><th>${w.amount}</th><th>${w.renews}</th><th>${w.sites}</th><th></th></tr></thead><tbody>
${d.subscriptions.map((s) => html`<tr data-subscription="${s.id}"><td>${s.plan} (${s.period})</td><td class="status-${s.status}" data-testid="status">${word(w, `status_${s.status}`)}${s.cancelAtPeriodEnd && (s.status === 'active' || s.status === 'past_due') ? html` · ${w.ends} ${when(s.periodEnd, d.language)}` : ''}${s.lastChargeError && s.status === 'past_due' ? html`<br><span class="muted">${w.lastError} ${s.lastChargeError}</span>` : ''}</td>
<td>${formatCad(s.amountCents)}</td><td>${s.status === 'active' || s.status === 'past_due' ? when(s.periodEnd, d.language) : ''}</td><td>${s.sites.join(', ')}</td>
<td>${s.status === 'active' || s.status === 'past_due' ? html`<form method="post" action="${base}subscriptions/${s.id}/${s.cancelAtPeriodEnd ? 'resume' : 'cancel'}"><input type="hidden" name="csrf" value="${opts.csrf}"><button class="secondary" type="submit">${s.cancelAtPeriodEnd ? w.resume : w.cancel}</button></form>` : ''}</td></tr>`)}
</tbody></table>`
  const payments = d.payments.length === 0 ? html`<p class="muted">${w.noPayments}</p>` : html`<table><thead><tr><th>${w.date}</th><th>${w.what}</th><th>${w.amount}</th><th>${w.status}</th><th>${w.method}</th><th></th></tr></thead><tbody>
${d.payments.map((p) => html`<tr data-payment="${p.id}"><td>${when(p.createdAt, d.language)}</td><td>${p.description}</td><td>${formatCad(p.amountCents)}</td><td class="pay-${p.status}">${word(w, `pay_${p.status}`)}</td><td>${p.method}</td><td>${p.status === 'succeeded' || p.status === 'refunded' ? html`<a href="${base}receipts/${p.id}/">${w.receipt}</a>` : ''}</td></tr>`)}
</tbody></table>`
  const body = html`<h1>${w.title}</h1>${d.email ? html`<p class="muted">${d.email}</p>` : ''}
${opts.notice ? html`<p class="notice" role="status" data-testid="notice">${opts.notice}</p>` : ''}
${card}
<section><h2>${w.subscriptions}</h2>${subscriptions}</section>
<section><h2>${w.payments}</h2>${payments}</section>
<p class="muted">${w.expires} ${new Date(d.expiresAt).toISOString().replace('T', ' ').slice(0, 16)} UTC.</p>`
  return page(d.language, w.title, true, body)
}

export function renderReceipt(r: ReceiptData): string {
  const w: Words = WORDS[r.language]
  const body = html`<h1>${w.receiptTitle}</h1>
<table><tbody>
<tr><th>${w.date}</th><td>${new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 16)} UTC</td></tr>
<tr><th>${w.what}</th><td data-testid="description">${r.description}</td></tr>
<tr><th>${w.amount}</th><td data-testid="amount">${formatCad(r.amountCents)}</td></tr>
<tr><th>${w.status}</th><td>${word(w, `pay_${r.status}`)}${r.refundedAt ? html` (${when(r.refundedAt, r.language)})` : ''}</td></tr>
<tr><th>${w.method}</th><td>${r.method}</td></tr>
<tr><th>${w.reference}</th><td><code>${r.processorRef}</code></td></tr>
${r.email ? html`<tr><th>${w.account}</th><td>${r.email}</td></tr>` : ''}
</tbody></table>
<p class="muted">${r.brand}${r.testMode ? html` · ${w.testReceipt}` : ''}</p>
<p><a href="/billing/portal/${r.token}/">${w.back}</a></p>`
  return page(r.language, `${w.receiptTitle} · ${r.brand}`, r.testMode, body)
}

export function renderPortalGone(lang: 'en' | 'fr' = 'en'): string {
  const w: Words = WORDS[lang]
  return page(lang, w.title, true, html`<h1>${w.title}</h1><p>${w.expired}</p>`)
}
