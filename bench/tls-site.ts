/**
 * The set-up bench:https and bench:h2 share: Pebble and `dist/berth serve` with HTTPS on (its DNS
 * as Pebble's resolver), one site on the dedicated plan (berth/php:1: nginx + PHP-FPM, kept-alive
 * upstream connections, 2 cores, so the container is not what limits either proxy) with a 2 KB
 * page, and the certificate Berth obtained for it by HTTP-01, read from its data folder for the
 * nginx reference to serve the same one. `dispose()` takes Berth, its sites and Pebble down.
 */
import Docker from 'dockerode'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { api, freePort, startBerth } from '../test/helpers/binary'
import { startPebble } from '../test/helpers/pebble'
import { buyDirect, waitForSite } from '../test/helpers/purchase'
import { instanceOf, removeInstanceSites } from '../test/helpers/sites'
import { SITE_PORT } from '../src/drivers/runtime/site-container'

const SITES = 'bench.test'

export async function startTlsSite(dir: string, slugPrefix: string) {
  const [port, dnsPort, tlsPort] = [await freePort(), await freePort(), await freePort()]
  const pebble = await startPebble({ httpPort: port, dnsServer: `127.0.0.1:${dnsPort}` })
  const berth = await startBerth({
    port,
    dataDir: join(dir, 'data'),
    env: {
      BERTH_SITES_DOMAIN: SITES, BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      BERTH_TLS_ACME_DIRECTORY: pebble.directoryUrl, BERTH_TLS_ACME_EMAIL: 'hoster@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true',
      BERTH_TLS_CA_BUNDLE: pebble.caBundleFile, BERTH_TLS_PREFLIGHT_RESOLVER: `127.0.0.1:${dnsPort}`,
    },
  })
  const dispose = async () => {
    await berth.dispose()
    await removeInstanceSites(berth)
    await pebble.stop()
  }
  try {
    instanceOf(berth)
    const slug = `${slugPrefix}${Date.now().toString(36)}`
    const key = (await buyDirect(berth.url, { slug, sku: 'svc_performance_monthly' })).data.api_key as string
    if ((await waitForSite(berth.url, key, slug, 120_000)) !== 'active') throw new Error(`the site ${slug} did not become active`)
    await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: `<h1>${'x'.repeat(2000)}</h1>` } })
    for (let i = 0; (await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.tls.status !== 'active'; i++) {
      if (i > 300) throw new Error('no certificate after 60 s')
      await Bun.sleep(200)
    }
    const db = new Database(join(berth.dataDir, 'berth.db'), { readonly: true })
    const { id } = db.query("SELECT id FROM certificates WHERE subject LIKE 'site:%'").get() as { id: string }
    db.close()
    const [cert, certKey] = ['crt', 'key'].map((ext) => join(berth.dataDir, 'tls', 'certs', `${id}.${ext}`)) as [string, string]
    const upstream = await containerAddress(instanceOf(berth)!, slug)
    return { berth, key, slug, host: `${slug}.${SITES}`, tlsPort, cert, certKey, upstream, dispose }
  } catch (err) {
    await dispose()
    throw err
  }
}

/** The site container's address on its network, where Berth's edge connects too. */
async function containerAddress(instance: string, slug: string): Promise<string> {
  const docker = new Docker({ socketPath: '/var/run/docker.sock' })
  const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instance}`, `dev.berth.site-slug=${slug}`] } })
  if (!c) throw new Error('no container for the site')
  const network = Object.values(c.NetworkSettings.Networks)[0]
  if (!network?.IPAddress) throw new Error('the container has no address')
  return `${network.IPAddress}:${SITE_PORT}`
}
