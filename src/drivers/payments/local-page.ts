import type { HostedSessionInfo } from './types'

import { escapeHtml as escape } from '../../lib/html'
import { formatCad } from '../../core/money'

/**
 * The built-in processor's hosted payment page: a real card form, plainly marked TEST MODE; no
 * real card is ever accepted. The form posts itself (method post, back to this page, with a CSRF
 * token), so it pays without scripts and card fields never travel in a URL; with scripts, the
 * Pay button posts JSON to ./confirm instead and shows the outcome in place. `error` is the
 * outcome of a form post that did not pay, shown above the form.
 */
export function renderPaymentPage(ref: string, session: HostedSessionInfo | null, opts: { csrf?: string; error?: string } = {}): string {
  const body = !session
    ? '<h1>Payment page not found</h1><p>This link is wrong or has expired.</p>'
    : session.state === 'paid' || session.state === 'processing'
      ? paidBlock()
      : session.state === 'closed'
        ? '<h1>This checkout is closed</h1><p>It was canceled or expired. Start a new checkout.</p>'
        : form(ref, session, opts.csrf ?? '', opts.error)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${session ? 'Pay ' + money(session) : 'Payment'} · Berth (test mode)</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;margin:0;color:#1d2330}
.banner{background:#ffb020;color:#1d2330;text-align:center;padding:.5rem;font-weight:600;letter-spacing:.03em}
main{max-width:26rem;margin:2rem auto;background:#fff;border-radius:12px;padding:1.5rem 2rem;box-shadow:0 2px 12px #0001}
label{display:block;margin-top:1rem;font-size:.9rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #c7ccd6;border-radius:6px;font-size:1rem}
.row{display:flex;gap:1rem}.row>div{flex:1}
button{margin-top:1.5rem;width:100%;padding:.8rem;border:0;border-radius:6px;background:#3056d3;color:#fff;font-size:1rem;font-weight:600;cursor:pointer}
button:disabled{background:#8a9bd8}
.amount{font-size:1.8rem;font-weight:700;margin:.2rem 0}.muted{color:#5b6475;font-size:.9rem}
.error{color:#b42318;margin-top:1rem;min-height:1.5rem}.ok{color:#067647}
code{background:#eef0f4;padding:0 .3rem;border-radius:4px}
</style></head>
<body><div class="banner" role="note">TEST MODE: no real money moves. Use a test card.</div>
<main>${body}</main></body></html>`
}

const money = (s: HostedSessionInfo) => formatCad(s.amountCents)

function form(ref: string, s: HostedSessionInfo, csrf: string, error?: string): string {
  return `<p class="muted">Berth hosting</p>
<div class="amount" data-testid="amount">${escape(money(s))}</div>
<p>${escape(s.description)}</p>
<form id="pay" method="post" action="${escape(`/pay/${ref}/`)}" novalidate>
<input type="hidden" name="csrf" value="${escape(csrf)}">
<label for="card">Card number</label><input id="card" name="card" inputmode="numeric" autocomplete="cc-number" placeholder="4242 4242 4242 4242" required>
<div class="row"><div><label for="exp">Expiry (MM/YY)</label><input id="exp" name="exp" placeholder="12/34" autocomplete="cc-exp" required></div>
<div><label for="cvc">CVC</label><input id="cvc" name="cvc" inputmode="numeric" placeholder="123" autocomplete="cc-csc" required></div></div>
<button id="submit" type="submit">Pay ${escape(money(s))}</button>
<div class="error" id="message" role="alert">${error ? escape(error) : ''}</div>
</form>
<p class="muted">Test cards: <code>4242 4242 4242 4242</code> pays, <code>4000 0000 0000 0002</code> is declined. Any future expiry and any 3-digit CVC.</p>
<script>
const formEl = document.getElementById('pay'), msg = document.getElementById('message'), btn = document.getElementById('submit')
formEl.addEventListener('submit', async (e) => {
  e.preventDefault(); msg.textContent = ''; btn.disabled = true
  const [m, y] = formEl.exp.value.split('/').map((v) => parseInt(v, 10))
  try {
    const res = await fetch(${JSON.stringify(`/pay/${ref}/confirm`)}, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ card_number: formEl.card.value, exp_month: m || 0, exp_year: y || 0, cvc: formEl.cvc.value }) })
    const out = await res.json()
    if (out.ok) { document.querySelector('main').innerHTML = ${JSON.stringify(paidBlock())} }
    else { msg.textContent = out.error.message; btn.disabled = false }
  } catch { msg.textContent = 'Could not reach the server; try again.'; btn.disabled = false }
})
</script>`
}

function paidBlock(): string {
  return '<h1 class="ok" data-testid="paid">Payment received</h1><p>Thank you. Your site is being set up; the agent that started this checkout will see it on its next poll. You can close this page.</p><p class="muted">Test mode receipt: no money was charged.</p>'
}
