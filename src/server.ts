import { createApp } from './api/app'
import { serializedResponse } from './api/http/envelope'
import { checkedPlanList } from './api/plans/routes'
import { followContainerEvents, followNodeHealth, runMaintenance } from './compose'
import type { ServerDeps } from './server-deps'
import { createEdgeProxy, parseSiteHost } from './edge/proxy'
import { hostNameOf } from './edge/host'
import { viaMcp } from './api/http/doors'
import { createMcpHandler } from './api/mcp/server'
import { eventsDoor } from './api/mcp/events'
import { buildOpenApi } from './api/openapi'
import { startDnsServer } from './dns/server'
import { dispatcher, isPlansList, LISTENER_WEBSOCKET, pathOf, type ListenerServer } from './dispatch'
import { consoleDoor } from './console/socket'
import type { ServedCertificate } from './domain/tls'
import { ensureConnectionMigration, HttpsListener } from './edge/https'
import { webhookHandler } from './api/webhooks/handler'
import { isMetricsPath, metricsHandler } from './api/prometheus/handler'
import { clusterJoinOverTlsOnly, isClusterJoinPath } from './api/cluster/join'
import { PassedSockets } from './drivers/systemd/sockets'

export type { ListenerDeps, ServerDeps } from './server-deps'

export interface RunningServer {
  server: ListenerServer
  url: string
  /** Settles once every listener listens (or the DNS one failed, which is logged): systemd's READY=1. */
  ready: Promise<void>
  /**
   * Once systemd has taken READY=1 (it watches the sockets it holds until then, and takes one
   * that stops listening for broken): the passed sockets' queued connections move to Berth's
   * listeners, which take every new one from now on (PassedSockets.handOver).
   */
  handOver(): void
  stop(): Promise<void>
}

/**
 * The store's copy off the box at shutdown is given up after this long: systemd kills Berth 30 s
 * after SIGTERM (TimeoutStopSec), and the listeners and jobs stop first.
 */
const SHUTDOWN_COPY_MS = 20_000
/**
 * The start-up reconcile waits this long after the listener opens: it loads the Docker client
 * (~150 ms of CPU), and the API, which needs only the store, should answer first. Start to the
 * first 200 went from ~290 to ~130 ms (bench/, issue 2).
 */
const START_RECONCILE_DELAY_MS = 500
/**
 * At stop, requests in flight get this long to finish before their connections are closed;
 * systemd's TimeoutStopSec (30 s) covers it and the copy below.
 */
const DRAIN_MS = 8_000

/**
 * Starts the listeners and the background work. Where each request goes is the table in
 * src/dispatch.ts (the edge for a site's Host, the API app for the rest...); this builds what its
 * entries send requests to.
 */
export function startServer(s: ServerDeps, passed: PassedSockets = PassedSockets.none()): RunningServer {
  const app = createApp(s)
  app.compile()
  const siteHost = new URL(s.config.server.siteUrl).hostname
  const domain = s.config.sites.domain
  /**
   * The slug a Host header names: `{slug}.{sites_domain}`, or a domain linked to a site. The last
   * answer is kept while sites and domains do not change: a site request asks twice (the
   * dispatch, then the edge), and kept-alive clients send the same Host again and again.
   */
  let last = { host: '', slug: null as string | null, version: -1 }
  const namesVersion = s.store.versionOf(['sites', 'names'])
  const slugOf = (host: string): string | null => {
    const version = namesVersion()
    if (host === last.host && version === last.version) return last.slug
    let slug = parseSiteHost(host, domain)
    if (slug === null) {
      const name = hostNameOf(host)
      slug = name === null ? null : s.directory.slugForDomain(name)
    }
    last = { host, slug, version }
    return slug
  }
  const edge = createEdgeProxy({
    resolve: (host) => {
      const slug = slugOf(host)
      return slug === null ? null : s.directory.resolve(slug)
    },
    metrics: s.metrics,
    accessLog: s.accessLog,
    log: s.log,
    siteUrl: s.config.server.siteUrl,
    modules: (request, site, flags, client, forward) => s.modulesEdge.handle(request, site, flags, client, forward),
  })
  // An app site's web moved to another port: the old one's connections go as its requests end.
  s.directory.onUpstreamMoved((address, port) => edge.retireUpstream(address, port))
  const { hostname, port } = s.config.server.listen
  if (passed.sockets.length > 0) {
    s.log.info('serving on the sockets systemd holds (berth.socket)', { sockets: passed.sockets.map((p) => `${p.address}:${p.port}/${p.transport}`) })
    // The hand-over from systemd's sockets to Berth's moves queued connections only with it.
    ensureConnectionMigration(s.log)
    const held = (transport: 'tcp' | 'udp', listen: { hostname: string; port: number } | null) => {
      if (listen && !passed.find(transport, listen.hostname, listen.port)) s.log.warn(`berth.socket holds no ${transport.toUpperCase()} socket for ${listen.hostname}:${listen.port}: it is refused while Berth restarts; run berth install, then systemctl restart berth.socket berth`)
    }
    held('tcp', s.config.server.listen)
    held('tcp', s.config.tls.listen)
    held('tcp', s.config.dns.listen)
    held('udp', s.config.dns.listen)
  }
  /** True when a Host header names a site (`{slug}.{sites_domain}` or a linked domain), not Berth itself. */
  const isSiteHost = (host: string) => host !== '' && !isHost(host, siteHost) && slugOf(host) !== null
  const plansList = () => serializedResponse(checkedPlanList(s.plans), crypto.randomUUID())
  let openapi: ReturnType<typeof buildOpenApi> | undefined
  const mcp = createMcpHandler({
    // A tool call's request takes the same way as one from the listener, the catalog's fast path included.
    dispatch: (request) => (request.method === 'GET' && isPlansList(pathOf(request.url)) ? Promise.resolve(plansList()) : app.handle(request)),
    openapi: () => (openapi ??= buildOpenApi(app, { baseUrl: s.config.server.baseUrl, version: s.status.version, testMode: s.status.testMode })),
    tag: (request, outer) => {
      s.clients.outer.set(request, outer)
      viaMcp.add(request)
    },
    keyOf: (authorization) => keyIdOf(s, authorization),
    admit: (request) => s.limiter.hit('mcp_initialize', s.clients.of(request)),
    limits: s.config.mcp,
    // Called at the first request, once both listeners listen.
    localPorts: () => ({ http: server.port ?? port, https: https?.port ?? null }),
    version: s.status.version,
    siteUrl: s.config.server.siteUrl,
    log: s.log,
    events: eventsDoor(s.eventFeed, s.keys),
  })
  const webhook = webhookHandler(s.processor, s.log)
  const metricsToken = s.config.metrics.token
  const metrics = metricsToken === null ? null : metricsHandler({ token: metricsToken, scrape: () => s.prometheus.scrape(), log: s.log })
  const consoles = consoleDoor({ tickets: s.consoleTickets, sessions: s.consoleSessions, siteUrl: s.config.server.siteUrl, log: s.log })
  // HTTPS (issue 12): the same dispatch behind a TLS listener, certificates from the manager.
  const tlsListen = s.config.tls.listen
  let served: ServedCertificate[] = []
  const https: HttpsListener | null = tlsListen && s.certs.enabled
    ? new HttpsListener({
        hostname: tlsListen.hostname,
        port: tlsListen.port,
        log: s.log,
        fetch: (request, srv) => dispatch(request, srv, true),
      })
    : null
  const refreshCertificates = () => {
    served = s.certs.served()
    https?.update(served)
  }
  // Rate limits and logs read the client's address; the HTTPS listener's peers are its own.
  const rememberPeer = (request: Request, srv: ListenerServer, secure: boolean) => {
    if (secure) s.clients.peers.set(request, srv.requestIP(request)?.address ?? '')
  }
  const dispatch = dispatcher({
    acmeAnswer: (token) => s.challenges.httpAnswer(token),
    httpsOrigin: (host) => {
      if (!https?.port) return null
      const name = host.toLowerCase().replace(/:\d+$/, '')
      if (!name || !s.certs.covers(name, served)) return null
      return `https://${name}${https.port === 443 ? '' : `:${https.port}`}`
    },
    isSiteHost,
    edge: (request, srv, host) => edge.handle(request, s.clients.ofPeer(request, srv.requestIP(request)?.address), host),
    plansList,
    webhook,
    mcp: (request, srv, secure) => {
      rememberPeer(request, srv, secure)
      return mcp.handle(request)
    },
    console: (request, srv) => consoles.handle(request, srv),
    metrics,
    // On the API's listeners the join's path only says where joins are taken: over TLS, pinned.
    clusterJoin: s.clusterJoin ? clusterJoinOverTlsOnly(joinUrlOf(s.config)) : null,
    api: (request, srv, secure) => {
      rememberPeer(request, srv, secure)
      return app.fetch(request)
    },
  })
  // A webhook event claimed by a process that stopped while acting on it is claimed by none now:
  // released before the listener opens, so that the processor's redelivery is acted on.
  const released = s.billing.releaseStaleClaims(s.clock.now())
  if (released > 0) s.log.warn('webhook events left claimed by a stopped process were released; their redeliveries will be acted on', { events: released })
  // Under berth.socket, the listener joins the passed socket's SO_REUSEPORT group (PassedSockets).
  const server = Bun.serve({
    hostname,
    port,
    reusePort: passed.find('tcp', hostname, port) !== undefined,
    // Bodies are limited per route by the JSON parser, with an enveloped 413; this only stops
    // absurd uploads before they are buffered.
    maxRequestBodySize: 1024 * 1024 * 1024,
    fetch: dispatch,
    websocket: LISTENER_WEBSOCKET,
  })
  s.clients.attach(server)
  const startedAt = s.clock.now()
  s.jobs.start()
  // The webhooks' deliveries: those a stopped process left pending are sent now (at least once).
  s.webhookSender.start()
  // Execs and console sessions run in this process only: one an earlier process left open is over.
  s.audit.markLost(['exec', 'console'], startedAt, 'berth stopped before it ended')
  if (https) {
    s.certs.subscribe(refreshCertificates)
    refreshCertificates()
  }
  // Berth's authoritative DNS (design.md, DNS details); a port it cannot take is logged and the
  // rest of Berth keeps serving.
  const dnsListen = s.config.dns.listen
  const dns = dnsListen
    ? startDnsServer({
        authority: s.zones, hostname: dnsListen.hostname, port: dnsListen.port, log: s.log, rateLimit: s.config.dns.rateLimit,
        udpFd: passed.find('udp', dnsListen.hostname, dnsListen.port)?.fd,
        reusePort: passed.find('tcp', dnsListen.hostname, dnsListen.port) !== undefined,
        counts: s.prometheus.dnsCounts,
      }).catch((err) => {
        s.log.error('the DNS server could not start; set dns.listen to a free port (or off)', { listen: `${dnsListen.hostname}:${dnsListen.port}`, error: (err as Error).message })
        return null
      })
    : Promise.resolve(null)
  const metricsListener = startMetricsListener(s)
  const joinListener = startJoinListener(s)
  // Certificates are ordered once Berth's DNS listens: a DNS-01 answer and the pre-flight (which
  // may ask this very server) need it, and a first order failing on a port not yet open would wait
  // an hour for its retry.
  let stopping = false
  void dns.then(() => {
    if (!stopping) s.certs.start()
  })
  const ready = dns.then(() => {})
  const reconcile = () => s.reconciler.reconcile().catch((err) => s.log.error('reconcile failed', { error: (err as Error).message }))
  // The site firewall (issue 23): checked and restored at once, then with every reconcile pass;
  // a host without iptables or the privilege gets a warning, never a refusal to serve.
  void s.firewall.keep()
  let unfollow = () => {}
  let unfollowNodes = () => {}
  const first = setTimeout(() => {
    // Events first, then the pass: a container that dies during the pass is seen either way.
    unfollow = followContainerEvents(s)
    // The site firewall follows the nodes (their addresses blocked, their agent ports closed): a
    // change is put in place with the health round that follows it.
    if (s.nodeHealth) unfollowNodes = followNodeHealth({ tick: () => s.nodeHealth!.tick().then(() => void s.firewall.keepIfChanged()) })
    void reconcile()
    // Money due while Berth was down (a period end, a retry, a suspension) is settled at start,
    // and payments an earlier process left pending are finished (nothing of it is in flight).
    void s.charges.resumePending(startedAt)
    void s.subscriptions.runDue()
    void s.renewals.renewDue()
    // Copies off the box: what an earlier process left pending (a kill -9 mid-copy), and the
    // store copy when due, without waiting for the first maintenance pass.
    s.offsite?.copier.kick()
  }, START_RECONCILE_DELAY_MS)
  const timers = [
    setInterval(() => {
      try {
        runMaintenance(s)
      } catch (err) {
        s.log.error('maintenance failed', { error: (err as Error).message })
      }
    }, s.config.server.maintenanceSeconds * 1000),
    setInterval(() => {
      void reconcile()
      void s.firewall.keep()
    }, s.config.containers.reconcileSeconds * 1000),
    // Sites' logs rotated by size (domain/logs/rotation.ts; a pass never throws).
    setInterval(() => void s.logRotation.rotateAll(), s.config.logs.rotateIntervalSeconds * 1000),
  ]
  const url = `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${server.port}`
  return {
    server,
    url,
    ready,
    handOver() {
      if (stopping) return
      for (const p of passed.handOver()) s.log.error('a socket systemd passed would not hand its connections over', { listen: `${p.address}:${p.port}`, fd: p.fd })
    },
    async stop() {
      stopping = true
      // From here on, new connections wait in the passed sockets' queues for the next process
      // (none are refused across `systemctl restart`); the listeners stop taking any, and the
      // requests in flight finish.
      for (const p of passed.takeBack()) s.log.error('a socket systemd passed would not listen again; connections may be refused until Berth is back', { listen: `${p.address}:${p.port}`, fd: p.fd })
      const drained = Promise.all([server.stop(), https?.stop(), dns.then((d) => d?.stop())])
      // Long polls of the event log answer now (an empty page: the agent asks again, of the next process).
      s.eventFeed.release()
      clearTimeout(first)
      unfollow()
      unfollowNodes()
      mcp.close()
      // Each console's shell is hung up (its processes killed) and its audit record ended.
      await s.consoleSessions.closeAll()
      timers.forEach(clearInterval)
      s.certs.stop()
      if (!(await settledWithin(drained, DRAIN_MS))) {
        s.log.warn('requests still in flight at stop were cut off', { after_ms: DRAIN_MS })
        await Promise.all([server.stop(true), https?.stop(true)])
      }
      await metricsListener?.stop()
      await joinListener?.stop()
      await s.jobs.stop()
      // A delivery in flight stays pending in the store and is sent again by the next start.
      s.webhookSender.stop()
      await s.accessLog.close()
      runMaintenance(s)
      // Last, so the copy holds what maintenance just wrote; bounded, never a hang.
      await s.offsite?.copier.stop(SHUTDOWN_COPY_MS)
    },
  }
}

/**
 * The separate /metrics listener of `metrics.listen` (plain HTTP, no token: it is meant for a
 * loopback or private address that only the scraper reaches). It serves GET /metrics and nothing
 * else. Like the DNS server, a port it cannot take is logged and the rest of Berth keeps serving.
 */
function startMetricsListener(s: Pick<ServerDeps, 'config' | 'prometheus' | 'log'>): { stop(): Promise<void> } | null {
  const listen = s.config.metrics.listen
  if (!listen) return null
  const handle = metricsHandler({ token: null, scrape: () => s.prometheus.scrape(), log: s.log })
  try {
    const server = Bun.serve({
      hostname: listen.hostname,
      port: listen.port,
      maxRequestBodySize: 64 * 1024,
      fetch: (request) => (isMetricsPath(pathOf(request.url)) ? handle(request) : new Response('Only /metrics is served here.\n', { status: 404, headers: { 'content-type': 'text/plain' } })),
    })
    s.log.info('metrics listener listening', { listen: `${listen.hostname}:${server.port}` })
    return { stop: () => server.stop() }
  } catch (err) {
    s.log.error('the metrics listener could not start; set metrics.listen to a free port (or off)', { listen: `${listen.hostname}:${listen.port}`, error: (err as Error).message })
    return null
  }
}

/**
 * The cluster's join listener (cluster.join_port on cluster.address): HTTPS with the control
 * plane's join certificate, whose SHA-256 `berth node join --fingerprint` pins. Serves POST
 * /cluster/v1/join only. A port it cannot take is logged; the rest of Berth keeps serving.
 */
function startJoinListener(s: Pick<ServerDeps, 'config' | 'clusterJoin' | 'clusterJoinTls' | 'log'>): { stop(): Promise<void> } | null {
  const join = s.clusterJoin
  if (!join || !s.clusterJoinTls) return null
  const { address, joinPort } = s.config.cluster
  try {
    const server = Bun.serve({
      hostname: address,
      port: joinPort,
      tls: { cert: s.clusterJoinTls.cert, key: s.clusterJoinTls.key },
      maxRequestBodySize: 128 * 1024,
      fetch: (request) => (isClusterJoinPath(pathOf(request.url)) ? join(request) : new Response('Only POST /cluster/v1/join is served here.\n', { status: 404, headers: { 'content-type': 'text/plain' } })),
    })
    s.log.info('cluster join listener listening', { listen: joinUrlOf(s.config) })
    return { stop: () => server.stop() }
  } catch (err) {
    s.log.error('the cluster join listener could not start: nodes cannot join; set cluster.join_port to a free port', { listen: `${address}:${joinPort}`, error: (err as Error).message })
    return null
  }
}

/** Where nodes join: https://{cluster.address}:{cluster.join_port}. */
function joinUrlOf(config: ServerDeps['config']): string {
  const host = config.cluster.address.includes(':') ? `[${config.cluster.address}]` : config.cluster.address
  return `https://${host}:${config.cluster.joinPort}`
}

/** The key id of a valid `Bearer` key in an Authorization header, or null. */
function keyIdOf(s: Pick<ServerDeps, 'keys'>, authorization: string | undefined): string | null {
  const match = authorization ? /^bearer\s+(\S+)\s*$/i.exec(authorization) : null
  if (!match) return null
  try {
    return s.keys.authenticate(match[1]!).keyId
  } catch {
    return null
  }
}

/** True when `work` settled within `ms`. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  const done = await Promise.race([work.then(() => true, () => true), late])
  clearTimeout(timer)
  return done
}

/** True when a Host header names `hostname`, with or without a port. */
function isHost(header: string, hostname: string): boolean {
  const h = header.toLowerCase()
  return h === hostname || h.startsWith(`${hostname}:`)
}
