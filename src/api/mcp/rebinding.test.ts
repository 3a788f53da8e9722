import { describe, expect, it } from 'vitest'
import { rebindingGuard } from './rebinding'

/** The MCP door's DNS-rebinding check (issue 23, part 9: the Origin's port counts too). */
const guard = rebindingGuard('https://hosting.example.net', () => ({ http: 8080, https: 8443 }))
const request = (host: string, origin?: string) => new Request('http://x/mcp/', { method: 'POST', headers: { host, ...(origin === undefined ? {} : { origin }) } })

describe('rebindingGuard', () => {
  it("accepts the site URL's origin and loopback names at Berth's own listeners", () => {
    expect(guard(request('hosting.example.net'))).toBeNull()
    expect(guard(request('hosting.example.net', 'https://hosting.example.net'))).toBeNull()
    expect(guard(request('hosting.example.net', 'https://hosting.example.net:443'))).toBeNull()
    expect(guard(request('HOSTING.example.net:443', 'https://Hosting.Example.NET'))).toBeNull()
    expect(guard(request('localhost:8080', 'http://localhost:8080'))).toBeNull()
    expect(guard(request('127.0.0.1:8080', 'http://127.0.0.1:8080'))).toBeNull()
    expect(guard(request('[::1]:8080', 'http://[::1]:8080'))).toBeNull()
    expect(guard(request('localhost:8443', 'https://localhost:8443'))).toBeNull()
  })

  it('refuses an Origin of the right host on another port', () => {
    expect(guard(request('hosting.example.net', 'https://hosting.example.net:9000'))).toBe("Origin 'https://hosting.example.net:9000' may not call this server; only https://hosting.example.net may.")
    expect(guard(request('localhost:8080', 'http://localhost:3000'))).toMatch(/may not call/)
    expect(guard(request('127.0.0.1:8080', 'http://127.0.0.1:8443'))).toMatch(/may not call/)
  })

  it('refuses an Origin of the right host and port with another scheme', () => {
    expect(guard(request('hosting.example.net', 'http://hosting.example.net'))).toMatch(/may not call/)
    expect(guard(request('hosting.example.net', 'http://hosting.example.net:443'))).toMatch(/may not call/)
    expect(guard(request('localhost:8080', 'https://localhost:8080'))).toMatch(/may not call/)
  })

  it('refuses foreign hosts and origins, a null origin and one that is not a URL', () => {
    expect(guard(request('evil.example'))).toBe("Host 'evil.example' is not this server's; use the address of site_url.")
    expect(guard(request('hosting.example.net', 'https://evil.example'))).toMatch(/may not call/)
    expect(guard(request('hosting.example.net', 'null'))).toBe("Origin 'null' may not call this server.")
    expect(guard(request('hosting.example.net', 'not a url'))).toBe('The Origin header is not a URL.')
  })

  it('takes the listeners\' ports when first asked (a listener on port 0 picks its own)', () => {
    let port = 0
    const late = rebindingGuard('http://127.0.0.1:1', () => ({ http: port, https: null }))
    port = 4321
    expect(late(request('localhost:4321', 'http://localhost:4321'))).toBeNull()
    expect(late(request('localhost:4321', 'http://localhost:1'))).toMatch(/may not call/)
  })
})
