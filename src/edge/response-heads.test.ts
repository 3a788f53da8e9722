import { describe, expect, it } from 'vitest'
import { ProtocolError } from './http1'
import { ResponseHeads } from './response-heads'

const NGINX = 'HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: 12\r\nConnection: keep-alive\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2'

describe('ResponseHeads', () => {
  it("gives the client the container's end-to-end fields and Via, leaving a body's length to the listener", () => {
    const head = new ResponseHeads().read(NGINX, 'GET')
    expect(head).toMatchObject({ status: 200, framing: { length: 12 }, keepAlive: true })
    const names = ['content-type', 'server', 'via', 'content-length', 'connection']
    expect(names.map((n) => head.headers.get(n))).toEqual(['text/html', 'nginx', '1.1 berth', null, null])
    expect(head.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
  })

  it('keeps Content-Length where no body follows (HEAD, 304)', () => {
    const heads = new ResponseHeads()
    expect(heads.read(NGINX, 'HEAD').headers.get('content-length')).toBe('12')
    expect(heads.read('HTTP/1.1 304 Not Modified\r\nContent-Length: 99', 'GET').headers.get('content-length')).toBe('99')
    // The same text after GET frames a body: the HEAD answer was not remembered for it.
    expect(heads.read(NGINX, 'GET').headers.get('content-length')).toBeNull()
  })

  it('answers a head seen before exactly as the first time, and a Response changing its fields changes nothing kept', () => {
    const heads = new ResponseHeads()
    const page = 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nLink: </a.css>; rel=preload\r\nLink: </b.js>; rel=preload\r\nContent-Length: 12'
    const first = heads.read(page, 'GET')
    const response = new Response('x', { headers: first.headers })
    response.headers.delete('link')
    response.headers.set('content-type', 'text/plain')
    const again = heads.read(page, 'GET')
    expect(again).toBe(first)
    expect(new Response('x', { headers: again.headers }).headers.get('link')).toBe('</a.css>; rel=preload, </b.js>; rel=preload')
    expect(again.headers.get('content-type')).toBe('text/html')
  })

  it('does not keep a head that sets a cookie (one of a kind), and reads it right every time', () => {
    const heads = new ResponseHeads()
    const a = heads.read(NGINX, 'GET')
    const b = heads.read(NGINX, 'GET')
    expect(a).not.toBe(b)
    expect(b.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
  })

  it('reads long heads every time, the same way', () => {
    const heads = new ResponseHeads()
    const long = `HTTP/1.1 200 OK\r\nX-Big: ${'v'.repeat(4000)}\r\nContent-Length: 1`
    const a = heads.read(long, 'GET')
    const b = heads.read(long, 'GET')
    expect(a).not.toBe(b)
    expect(b.headers.get('x-big')).toHaveLength(4000)
  })

  it('refuses a field the client could not be given as a protocol error, every time', () => {
    const heads = new ResponseHeads()
    const bad = 'HTTP/1.1 200 OK\r\nX-Bad\u0000Name: 1\r\nContent-Length: 1'
    expect(() => heads.read(bad, 'GET')).toThrow(ProtocolError)
    expect(() => heads.read(bad, 'GET')).toThrow(/unusable response field/)
  })
})
