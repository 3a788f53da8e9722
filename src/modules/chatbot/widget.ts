/** Where the chatbot lives on every site's own host (a path no site is likely to use). */
export const CHATBOT_SCRIPT_PATH = '/__berth/chatbot.js'
export const CHATBOT_ASK_PATH = '/__berth/chatbot/ask'

/** What the edge adds to the head of a page while the chatbot is on. */
export const WIDGET_TAG = `<script src="${CHATBOT_SCRIPT_PATH}" defer data-berth-chatbot></script>`

/**
 * The widget: a button in the corner that opens a small panel; a question is posted to the
 * site's own ask endpoint and the answer is shown with links to the pages it came from. No
 * external assets, no cookies; every text from the server is set as text, never as markup.
 */
export const WIDGET_JS = `(() => {
  if (window.__berthChatbot) return; window.__berthChatbot = true
  const css = 'position:fixed;right:16px;bottom:16px;z-index:2147483000;font:14px/1.4 system-ui,sans-serif'
  const root = document.createElement('div'); root.id = 'berth-chatbot'; root.style.cssText = css
  const button = document.createElement('button'); button.type = 'button'; button.textContent = 'Ask this site'
  button.setAttribute('aria-expanded', 'false')
  button.style.cssText = 'border:0;border-radius:20px;padding:10px 16px;background:#3056d3;color:#fff;cursor:pointer;box-shadow:0 2px 8px #0003'
  const panel = document.createElement('div'); panel.hidden = true
  panel.style.cssText = 'width:300px;max-height:420px;overflow:auto;background:#fff;color:#1d2330;border-radius:12px;box-shadow:0 4px 20px #0003;padding:12px;margin-bottom:8px'
  const log = document.createElement('div'); log.setAttribute('role', 'log'); log.setAttribute('aria-live', 'polite')
  const form = document.createElement('form')
  const input = document.createElement('input'); input.name = 'question'; input.maxLength = 500; input.placeholder = 'Your question'; input.required = true
  input.setAttribute('aria-label', 'Your question')
  input.style.cssText = 'width:100%;box-sizing:border-box;padding:8px;border:1px solid #c7ccd6;border-radius:6px;margin-top:8px'
  form.append(input); panel.append(log, form); root.append(panel, button)
  const say = (text, who, sources) => {
    const p = document.createElement('p'); p.style.margin = '6px 0'; p.dataset.who = who
    p.textContent = text
    for (const s of sources || []) {
      const a = document.createElement('a'); a.href = s.url; a.textContent = s.title || s.url
      a.style.cssText = 'display:block;color:#3056d3'; p.append(a)
    }
    log.append(p); panel.scrollTop = panel.scrollHeight
  }
  button.addEventListener('click', () => { panel.hidden = !panel.hidden; button.setAttribute('aria-expanded', String(!panel.hidden)); if (!panel.hidden) input.focus() })
  form.addEventListener('submit', async (e) => {
    e.preventDefault(); const q = input.value.trim(); if (!q) return
    say(q, 'visitor'); input.value = ''
    try {
      const res = await fetch('${CHATBOT_ASK_PATH}', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: q }) })
      const out = await res.json()
      if (out.ok) say(out.data.answer, 'bot', out.data.sources); else say(out.error.message, 'bot')
    } catch { say('The assistant cannot be reached right now.', 'bot') }
  })
  const mount = () => document.body.append(root)
  if (document.body) mount(); else document.addEventListener('DOMContentLoaded', mount)
})()
`
