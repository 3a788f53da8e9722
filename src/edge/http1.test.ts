import { describe, expect, it } from 'vitest'
import { ChunkedDecoder, ProtocolError, parseResponseHead } from './http1'

describe('parseResponseHead', () => {
  it('reads status, end-to-end fields as received and a Content-Length body on a kept-alive connection', () => {
    const head = parseResponseHead('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length:  12 \r\nSet-Cookie: a=1\r\nSet-Cookie: b=2', 'GET')
    expect(head).toEqual({
      status: 200,
      fields: ['Content-Type', ' text/html', 'Set-Cookie', ' a=1', 'Set-Cookie', ' b=2', 'content-length', '12'],
      framing: { length: 12 },
      keepAlive: true,
    })
  })

  it('leaves out hop-by-hop fields, those Connection names, and a Content-Length beside Transfer-Encoding', () => {
    const head = parseResponseHead(
      'HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: x\r\nTE: trailers\r\nTrailer: X-Sum\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nVia: 1.0 inner\r\nX-Kept: yes',
      'GET',
    )
    expect(head.fields).toEqual(['Via', ' 1.0 inner', 'X-Kept', ' yes'])
    expect(head.framing).toBe('chunked')
  })

  it.each([
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked', 'GET', 'chunked', true],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked', 'GET', 'chunked', true],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5', 'GET', 'chunked', false],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip', 'GET', 'close', false],
    ['HTTP/1.1 200 OK', 'GET', 'close', false],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5', 'HEAD', 'none', true],
    ['HTTP/1.1 204 No Content', 'GET', 'none', true],
    ['HTTP/1.1 304 Not Modified\r\nContent-Length: 99', 'GET', 'none', true],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close', 'GET', { length: 5 }, false],
    ['HTTP/1.0 200 OK\r\nContent-Length: 5', 'GET', { length: 5 }, false],
    ['HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: Keep-Alive', 'GET', { length: 5 }, true],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nContent-Length: 5', 'GET', { length: 5 }, true],
    ['HTTP/1.1 200', 'HEAD', 'none', true],
  ])('%j after %s frames the body as %j (keep-alive %s)', (text, method, framing, keepAlive) => {
    const head = parseResponseHead(text, method)
    expect(head.framing).toEqual(framing)
    expect(head.keepAlive).toBe(keepAlive)
  })

  it('accepts interim heads, which have no body', () => {
    expect(parseResponseHead('HTTP/1.1 103 Early Hints\r\nLink: </a>', 'GET')).toMatchObject({ status: 103, framing: 'none' })
  })

  it.each([
    ['SPDY/3 200 OK', 'a foreign protocol'],
    ['HTTP/1.1 20 OK', 'a two-digit status'],
    ['HTTP/1.1 600 Nope', 'a status above 599'],
    ['HTTP/1.1 101 Switching Protocols', 'a protocol switch nobody asked for'],
    ['HTTP/2 200 OK', 'another HTTP version'],
    ['HTTP/1.1 200 OK\r\nX-A: 1\r\n folded', 'obsolete line folding'],
    ['HTTP/1.1 200 OK\r\nX-A : 1', 'whitespace before the colon'],
    ['HTTP/1.1 200 OK\r\nno colon here', 'a line without a colon'],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6', 'conflicting lengths'],
    ['HTTP/1.1 200 OK\r\nContent-Length: -1', 'a negative length'],
    ['HTTP/1.1 200 OK\r\nContent-Length: 0x10', 'a hexadecimal length'],
  ])('rejects %j (%s)', (text) => {
    expect(() => parseResponseHead(text, 'GET')).toThrow(ProtocolError)
  })
})

describe('ChunkedDecoder', () => {
  const decode = (parts: string[]) => {
    const decoder = new ChunkedDecoder()
    let out = ''
    let end = -1
    for (const part of parts) {
      end = decoder.push(Buffer.from(part, 'latin1'), (data) => (out += data.toString('latin1')))
    }
    return { out, end, done: decoder.done }
  }

  it('decodes chunks, dropping extensions and trailers, and says where the message ended', () => {
    const message = '4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Sum: 1\r\n\r\n'
    expect(decode([`${message}NEXT`])).toEqual({ out: 'Wikipedia in\r\n\r\nchunks.', end: message.length, done: true })
  })

  it('decodes input split at every byte', () => {
    const text = 'a\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n'
    const result = decode(text.split(''))
    expect(result.out).toBe('0123456789abc')
    expect(result.done).toBe(true)
    expect(result.end).toBe(1)
  })

  it('accepts bare LF line ends (RFC 9112 section 2.2)', () => {
    expect(decode(['3\nabc\n0\n\n']).out).toBe('abc')
  })

  it('asks for more input until the last chunk and its blank line arrive', () => {
    expect(decode(['3\r\nabc\r\n0\r\n']).end).toBe(-1)
  })

  it.each([['zz\r\n'], ['3\r\nabcX'], [`${'1'.repeat(13)}\r\n`], [`1;${'x'.repeat(9000)}`]])('rejects %j', (text) => {
    expect(() => decode([text])).toThrow(ProtocolError)
  })
})
