// The console page's script (src/console/page.ts serves it, embedded in the binary): xterm.js
// fitted to the window, joined to the session's WebSocket at {this page}/socket. The protocol
// (docs/api.md, Console): binary frames are terminal bytes both ways; text frames are JSON
// control messages: {"type":"resize","cols":C,"rows":R} from here, {"type":"exit","code":N} and
// {"type":"error","code":"...","message":"..."} from the server, which then closes.
;(function () {
  'use strict'
  var nonce = document.currentScript && document.currentScript.nonce
  // xterm.js adds <style> elements as it draws; the page's CSP takes only those with its nonce.
  var createElement = document.createElement.bind(document)
  document.createElement = function (tag, options) {
    var element = createElement(tag, options)
    if (nonce && String(tag).toLowerCase() === 'style') element.nonce = nonce
    return element
  }

  var box = document.getElementById('terminal')
  var status = document.getElementById('status')
  var small = Math.min(window.innerWidth, window.innerHeight) < 600
  var term = new Terminal({
    cursorBlink: true,
    fontSize: small ? 12 : 14,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace',
    scrollback: 5000,
    theme: { background: '#111318' },
  })
  var fit = new FitAddon.FitAddon()
  term.loadAddon(fit)
  term.open(box)
  fitNow()

  var socketUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + location.pathname.replace(/\/$/, '') + '/socket'
  var ws = new WebSocket(socketUrl + '?cols=' + term.cols + '&rows=' + term.rows)
  ws.binaryType = 'arraybuffer'
  var encoder = new TextEncoder()
  var ended = false

  function show(text, state) {
    status.textContent = text
    status.dataset.state = state
  }

  function fitNow() {
    // A phone's on-screen keyboard shrinks the visual viewport, not the layout one.
    if (window.visualViewport) document.body.style.height = window.visualViewport.height + 'px'
    try {
      fit.fit()
    } catch (e) {}
    box.dataset.cols = String(term.cols)
    box.dataset.rows = String(term.rows)
  }

  function send(bytes) {
    if (ws.readyState === WebSocket.OPEN) ws.send(bytes)
  }

  function end(text) {
    if (ended) return
    ended = true
    show(text, 'ended')
    term.options.cursorBlink = false
    term.write('\r\n\x1b[2m[' + text + ']\x1b[0m\r\n')
  }

  ws.onopen = function () {
    show('Connected', 'open')
    term.focus()
  }
  ws.onmessage = function (event) {
    if (typeof event.data !== 'string') return term.write(new Uint8Array(event.data))
    var message
    try {
      message = JSON.parse(event.data)
    } catch (e) {
      return
    }
    if (message.type === 'exit') end('Session ended: exit code ' + message.code)
    else if (message.type === 'error') end('Session ended: ' + message.message)
  }
  ws.onclose = function () {
    end('Session ended: the connection closed.')
  }

  term.onData(function (data) {
    send(encoder.encode(data))
  })
  // Mouse reports in the legacy encoding: one byte per character.
  term.onBinary(function (data) {
    var bytes = new Uint8Array(data.length)
    for (var i = 0; i < data.length; i++) bytes[i] = data.charCodeAt(i) & 0xff
    send(bytes)
  })
  term.onResize(function (size) {
    box.dataset.cols = String(size.cols)
    box.dataset.rows = String(size.rows)
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols: size.cols, rows: size.rows }))
  })

  var pending = 0
  function refit() {
    clearTimeout(pending)
    pending = setTimeout(fitNow, 50)
  }
  window.addEventListener('resize', refit)
  window.addEventListener('orientationchange', refit)
  if (window.visualViewport) window.visualViewport.addEventListener('resize', refit)

  // The key bar, for phones: keys their keyboards lack.
  var KEYS = { esc: '\x1b', tab: '\t', 'ctrl-c': '\x03', 'ctrl-d': '\x04', up: '\x1b[A', down: '\x1b[B', left: '\x1b[D', right: '\x1b[C' }
  document.getElementById('keys').addEventListener('click', function (event) {
    var key = event.target.closest && event.target.closest('button')
    if (!key || !KEYS[key.dataset.key]) return
    send(encoder.encode(KEYS[key.dataset.key]))
    term.focus()
  })
})()
