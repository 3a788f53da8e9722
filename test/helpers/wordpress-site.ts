import { expect } from 'vitest'

/** A page as WordPress answered it through Berth's edge. */
export interface WpPage { status: number; text: string; headers: Headers }

/**
 * A WordPress site as a browser and wp-admin's scripts use it, through Berth's edge at `edgeUrl`
 * with the site's host name (test/wordpress.e2e.test.ts, test/cluster-databases.e2e.test.ts).
 */
export class WordPressSite {
  constructor(private edgeUrl: string, private host: string, private admin: { user: string; password: string }) {}

  /** A request as a browser would send it (redirects not followed). */
  async page(path: string, init: { method?: string; form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {}): Promise<WpPage> {
    const headers: Record<string, string> = { host: this.host, ...init.headers }
    let body: string | undefined
    if (init.form) [headers['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(init.form).toString()]
    if (init.json) [headers['content-type'], body] = ['application/json', JSON.stringify(init.json)]
    const res = await fetch(`${this.edgeUrl}${path}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' })
    return { status: res.status, text: await res.text(), headers: res.headers }
  }

  /** WordPress's own installer, step 2, as its form posts it: the site titled `title`, the admin made. */
  async install(title: string): Promise<WpPage> {
    return this.page('/wp-admin/install.php?step=2', {
      form: { weblog_title: title, user_name: this.admin.user, admin_password: this.admin.password, admin_password2: this.admin.password, pw_weak: '1', admin_email: 'admin@example.com', blog_public: '0', language: '' },
    })
  }

  /** Logs in as the admin through wp-login.php, as a browser does: the cookies it sets, as one Cookie header. */
  async login(): Promise<string> {
    const res = await this.page('/wp-login.php', {
      form: { log: this.admin.user, pwd: this.admin.password, 'wp-submit': 'Log In', testcookie: '1', redirect_to: '/wp-admin/' },
      headers: { cookie: 'wordpress_test_cookie=WP%20Cookie%20check' },
    })
    expect(res.status, res.text.slice(0, 1000)).toBe(302)
    const cookies = res.headers.getSetCookie().map((c) => c.split(';')[0]!).filter((c) => !c.endsWith('=deleted'))
    expect(cookies.some((c) => c.startsWith('wordpress_logged_in_'))).toBe(true)
    return cookies.join('; ')
  }

  /** A post published through the REST API, logged in, with the nonce wp-admin's scripts fetch: WordPress's answer. */
  async publish(title: string, content: string): Promise<WpPage> {
    const cookie = await this.login()
    const nonce = await this.page('/wp-admin/admin-ajax.php?action=rest-nonce', { headers: { cookie } })
    expect(nonce.status).toBe(200)
    expect(nonce.text).toMatch(/^[0-9a-f]{10}$/)
    return this.page('/?rest_route=/wp/v2/posts', { json: { title, content, status: 'publish' }, headers: { cookie, 'x-wp-nonce': nonce.text } })
  }

  /** Post `id` as WordPress shows it: its page's status, and its title from the REST API when the page holds `title`. */
  async shown(id: number, title: string): Promise<{ page: number; title: string | null }> {
    const html = await this.page(`/?p=${id}`)
    const rest = await this.page(`/?rest_route=/wp/v2/posts/${id}`)
    return { page: html.status, title: rest.status === 200 && html.text.includes(title) ? JSON.parse(rest.text).title.rendered : null }
  }

  /** `shown` until it has the title (a database coming back, a site starting), at most `ms`. */
  async shownWithin(id: number, title: string, ms: number): Promise<{ page: number; title: string | null }> {
    const look = () => this.shown(id, title).catch(() => ({ page: 0, title: null }))
    let seen = await look()
    for (const deadline = Date.now() + ms; seen.title === null && Date.now() < deadline; seen = await look()) await Bun.sleep(500)
    return seen
  }
}
