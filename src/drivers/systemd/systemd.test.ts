import { describe, expect, it } from 'vitest'
import { renderSocketUnit } from '../../install/unit'
import { SystemdNotifier } from './notify'
import { PassedSockets } from './sockets'

describe('PassedSockets.fromEnv', () => {
  it("takes none meant for another process ($LISTEN_PID not this one's), and clears $LISTEN_* for the programs Berth runs", () => {
    const env: Record<string, string | undefined> = { LISTEN_FDS: '3', LISTEN_PID: '1', LISTEN_FDNAMES: 'a:b:c', PATH: '/bin' }
    expect(PassedSockets.fromEnv(env, 4242).sockets).toEqual([])
    expect(env).toEqual({ PATH: '/bin' })
  })

  it('takes none without $LISTEN_FDS or with a count that is not one', () => {
    expect(PassedSockets.fromEnv({}, 7).sockets).toEqual([])
    expect(PassedSockets.fromEnv({ LISTEN_FDS: '0', LISTEN_PID: '7' }, 7).sockets).toEqual([])
    expect(PassedSockets.fromEnv({ LISTEN_FDS: 'x', LISTEN_PID: '7' }, 7).sockets).toEqual([])
  })

  it('finds a socket by transport and address, 0.0.0.0 and [::] as the config writes them', () => {
    const passed = Object.assign(Object.create(PassedSockets.prototype), {
      sockets: [
        { fd: 3, transport: 'tcp', address: '0.0.0.0', port: 80 },
        { fd: 4, transport: 'udp', address: '127.0.0.1', port: 53 },
        { fd: 5, transport: 'tcp', address: '::', port: 443 },
      ],
    }) as PassedSockets
    expect(passed.find('tcp', '0.0.0.0', 80)?.fd).toBe(3)
    expect(passed.find('udp', '127.0.0.1', 53)?.fd).toBe(4)
    expect(passed.find('tcp', '127.0.0.1', 53)).toBeUndefined()
    expect(passed.find('udp', 'localhost', 53)?.fd).toBe(4)
    expect(passed.find('tcp', '[::]', 443)?.fd).toBe(5)
    expect(passed.find('tcp', '0.0.0.0', 8080)).toBeUndefined()
  })
})

describe('SystemdNotifier', () => {
  it('outside systemd does nothing, and a barrier passes at once', async () => {
    const n = SystemdNotifier.fromEnv({ WATCHDOG_USEC: '3000000' })
    expect(n.enabled).toBe(false)
    expect(n.watchdogMs).toBeNull()
    expect(n.notify('READY=1')).toBe(false)
    expect(await n.barrier()).toBe(true)
  })

  it("pings at systemd's WatchdogSec when the watchdog is this process's, and takes $NOTIFY_SOCKET out of the environment", () => {
    const env: Record<string, string | undefined> = { NOTIFY_SOCKET: '/run/systemd/notify', WATCHDOG_USEC: '3000000', WATCHDOG_PID: '99' }
    expect(SystemdNotifier.fromEnv(env, 99).watchdogMs).toBe(3000)
    expect(env).toEqual({})
    expect(SystemdNotifier.fromEnv({ NOTIFY_SOCKET: '@x', WATCHDOG_USEC: '3000000', WATCHDOG_PID: '98' }, 99).watchdogMs).toBeNull()
  })
})

describe('renderSocketUnit', () => {
  it("holds the config's listeners: HTTP, HTTPS, and DNS on TCP and UDP, joinable by Berth's own (ReusePort)", () => {
    const unit = renderSocketUnit({ http: { hostname: '0.0.0.0', port: 80 }, https: { hostname: '0.0.0.0', port: 443 }, dns: { hostname: '::', port: 53 } })
    expect(unit.split('\n').filter((l) => l.startsWith('Listen'))).toEqual(['ListenStream=0.0.0.0:80', 'ListenStream=0.0.0.0:443', 'ListenStream=[::]:53', 'ListenDatagram=[::]:53'])
    expect(unit).toMatch(/^ReusePort=yes$/m)
    expect(unit).toMatch(/^Service=berth\.service$/m)
  })

  it('leaves out what is off, and a listener named by a host name (Berth binds it itself)', () => {
    const unit = renderSocketUnit({ http: { hostname: 'berth.internal', port: 8080 }, https: null, dns: { hostname: 'localhost', port: 5353 } })
    expect(unit.split('\n').filter((l) => l.startsWith('Listen'))).toEqual(['ListenStream=127.0.0.1:5353', 'ListenDatagram=127.0.0.1:5353'])
  })
})
