import { secretFilesOf } from '../compose'
import { buildApp } from '../compose/app'
import { prepareControlPlane } from '../compose/cluster'
import { createLogger } from '../lib/logger'
import { probeOpenat2 } from '../drivers/files/syscalls'
import type { Logger } from '../lib/logger'
import { tightenPrivateFiles, type WidenedFile } from '../lib/private-file'
import { PassedSockets } from '../drivers/systemd/sockets'
import { SystemdNotifier } from '../drivers/systemd/notify'
import { startServer } from '../server'
import { VERSION } from '../version'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command } from './command'
import { configFrom } from './config-flags'
import { lockOrSay } from './admin'
import { startAdminListener } from '../admin/listener'
import { adminSocketPath } from '../admin/protocol'

export const serveCommand: Command = {
  path: ['serve'],
  summary: 'Run Berth: the API, the discovery documents and the edge proxy on one listener.',
  usage: 'berth serve [--listen HOST:PORT] [--data-dir DIR] [--site-url URL] [--config FILE]',
  description: [
    'With no config at all it runs the embedded default: SQLite in ./.berth-data, the built-in',
    'test-mode payment processor, sites at http://{slug}.localhost:8080/. Each flag can also be set',
    'in the config file or by a BERTH_SERVER_* variable; flags win. SIGTERM or SIGINT stops it',
    'gracefully: in-flight requests finish and pending writes are flushed.',
    '',
    'Also, by config: HTTPS for every site on tls.listen once an ACME directory is set (tls.*), the',
    'authoritative DNS on dns.listen (dns.*), Stripe instead of the test processor (payments.*), and',
    'an AI provider for the translation and content modules (ai.*). Subscriptions renew, unpaid',
    'sites are suspended after 7 days, certificates renew, and sites\' ~/logs/*.log rotate by size',
    '(logs.*: 10 MiB, 5 kept), all from this process: no cron job. Each site\'s files are held to',
    "its plan's disk_gb (a filesystem of that size). It keeps room for itself on the data folder's",
    'disk (disk.*): under the reserve, new sites, snapshots and backups are refused with 507 while',
    'everything that exists keeps serving. Every key: docs/configuration.md.',
    '',
    'It is the only process that changes the sites: the admin commands (berth sites, accounts,',
    'plans, nodes, offsite push) ask it over its admin API, HTTP on the Unix socket',
    'DATA_DIR/admin.sock (mode 0600, made by the user it runs as: root under systemd, where',
    'DATA_DIR is /var/lib/berth), which no other listener serves. It holds DATA_DIR/berth.lock',
    'while it runs: a second berth serve, or berth restore or berth migrate on the same data folder,',
    'is refused with the holder\'s pid.',
  ].join('\n'),
  options: {
    listen: { type: 'string', value: 'HOST:PORT', help: 'Listen address (server.listen; $BERTH_SERVER_LISTEN; default 0.0.0.0:8080).' },
    'site-url': { type: 'string', value: 'URL', help: 'Public origin (server.site_url; $BERTH_SERVER_SITE_URL; default http://localhost:8080).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
    json: { type: 'boolean', help: 'Print the start-up line as JSON (logs are always JSON lines).' },
  },
  examples: [
    'berth serve',
    'berth serve --listen 127.0.0.1:9000 --data-dir /tmp/berth --site-url https://hosting.example.com',
    'BERTH_SERVER_LISTEN=0.0.0.0:80 berth serve --config /etc/berth/berth.toml',
  ],
  async run(ctx) {
    // Under systemd: the sockets berth.socket holds, and where to say ready, alive and stopping.
    const passed = PassedSockets.fromEnv(process.env)
    const notifier = SystemdNotifier.fromEnv(process.env)
    const config = configFrom(ctx)
    // The one process that owns this data folder: a second berth serve, or serve while berth
    // restore or migrate works on it, is refused here, naming the holder.
    const lock = lockOrSay(ctx, config.server.dataDir, 'berth serve')
    if (!lock) return 1
    // Before the store opens, so that SQLite's -wal and -shm files take the store's corrected mode.
    const widened = tightenPrivateFiles(secretFilesOf(config))
    // In a cluster: the PKI (made at the first start) and this engine as the Swarm's manager,
    // before the runtime and the join's route need them.
    const clusterPki = await prepareControlPlane(config, createLogger(config.server.logLevel))
    const services = buildApp(config, 'serve', { clusterPki })
    const running = startServer(services.server, passed)
    // The admin commands' door (admin/listener.ts): root only, in the data folder.
    const admin = startAdminListener(adminSocketPath(config.server.dataDir), services.admin, services.log)
    services.log.info('berth listening', {
      version: VERSION,
      url: running.url,
      site_url: config.server.siteUrl,
      data_dir: config.server.dataDir,
      config_file: config.configFile,
      admin_socket: admin.path,
      test_mode: services.status.testMode,
    })
    // Once, at start: a sandbox that filters openat2 breaks the files API for every site.
    const openat2 = probeOpenat2()
    if (openat2) services.log.error("the files API, logs, disk usage, restores and the AI modules' reads of site files cannot work here", { error: openat2 })
    reportWidened(widened, services.log)
    await running.ready
    notifier.ready(`serving on ${running.url}`)
    if (!(await notifier.barrier())) services.log.warn('systemd did not confirm READY=1 in time; handing its sockets over anyway')
    running.handOver()
    await new Promise<void>((resolve) => {
      const stop = async (signal: string) => {
        services.log.info('stopping', { signal })
        notifier.stopping('finishing the requests in flight')
        await running.stop()
        await admin.stop()
        notifier.stopped()
        services.close()
        lock.release()
        resolve()
      }
      process.once('SIGTERM', () => void stop('SIGTERM'))
      process.once('SIGINT', () => void stop('SIGINT'))
    })
    return 0
  },
}

/**
 * Says which files holding secrets were open to others at start: Berth set each back to 0600
 * (a warning), or could not (an error naming the command to run).
 */
function reportWidened(widened: WidenedFile[], log: Logger): void {
  for (const w of widened) {
    if (w.fixed) log.warn(`${w.file} holds secrets and was mode ${w.was} (others could read it); Berth set it to 0600`, { file: w.file, was: w.was })
    else log.error(`${w.file} holds secrets and is mode ${w.was} (others can read it), and Berth could not change it (${w.error}); run: chmod 600 ${w.file}`, { file: w.file, mode: w.was })
  }
}
