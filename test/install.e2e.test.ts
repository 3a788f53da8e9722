import { spawn, spawnSync } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { renderSocketUnit, renderUnit } from '../src/install/unit'
import { BINARY, freePort } from './helpers/binary'

const run = (...args: string[]) => {
  const p = spawnSync([BINARY, ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH } })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

async function until(check: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(50)
  }
}

describe('berth install', () => {
  it('lays out config, data folder, binary and unit under --root', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    const res = run('install', '--root', root, '--json')
    expect(res.code).toBe(0)
    const out = JSON.parse(res.out)
    expect(out.actions).toMatchObject({ config: 'written', unit: 'written', binary: 'copied', sysctl: 'written' })
    expect(readFileSync(join(root, 'etc/sysctl.d/60-berth.conf'), 'utf8')).toBe('net.ipv4.tcp_migrate_req = 1\n')
    expect(statSync(join(root, 'var/lib/berth')).mode & 0o777).toBe(0o750)
    expect(statSync(join(root, 'usr/local/bin/berth')).mode & 0o111).toBeTruthy()
    expect(readFileSync(join(root, 'etc/systemd/system/berth.service'), 'utf8')).toBe(renderUnit())
    // A new config's listeners (HTTP 8080, HTTPS 443, DNS 53), held by systemd across restarts.
    expect(readFileSync(join(root, 'etc/systemd/system/berth.socket'), 'utf8')).toBe(renderSocketUnit())
    expect(out.actions.socket).toBe('written')
    const config = readFileSync(join(root, 'etc/berth/berth.toml'), 'utf8')
    // What docs/install.md says a new config sets, and nothing else.
    const set = config.split('\n').filter((l) => l.trim() && !l.startsWith('#') && !l.startsWith('['))
    expect(set).toEqual(['data_dir = "/var/lib/berth"', 'listen = "0.0.0.0:53"', 'listen = "0.0.0.0:443"'])
    expect(config).toMatch(/\[dns\][^[]*\nlisten = "0\.0\.0\.0:53"/)
    expect(config).toMatch(/\[tls\][^[]*\nlisten = "0\.0\.0\.0:443"/)
    // The written config is a valid config for the installed binary.
    const check = spawnSync([join(root, 'usr/local/bin/berth'), 'migrate', '--dry-run', '--json', '--config', join(root, 'etc/berth/berth.toml'), '--data-dir', join(root, 'var/lib/berth')], { stdout: 'pipe', stderr: 'pipe' })
    expect(check.exitCode, check.stderr.toString()).toBe(0)
  })

  it('says what it wrote, the sysctl file included, in its output and its --help', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    const res = run('install', '--root', root, '--no-binary')
    expect(res.code).toBe(0)
    expect(res.out).toContain(`sysctl   ${join(root, 'etc/sysctl.d/60-berth.conf')}: net.ipv4.tcp_migrate_req = 1 (written)`)
    const help = run('install', '--help').out.replace(/\s+/g, ' ')
    expect(help).toContain('/etc/sysctl.d/60-berth.conf (net.ipv4.tcp_migrate_req = 1')
    expect(help).toContain('runs sysctl -p on that file')
  })

  it('upgrades the binary while it runs: the new file is renamed over the running one', async () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    expect(run('install', '--root', root).code).toBe(0)
    const installed = join(root, 'usr/local/bin/berth')
    const port = await freePort()
    const old = spawn([installed, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(root, 'var/lib/berth')], { env: { PATH: process.env.PATH, BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false' }, stdout: 'ignore', stderr: 'ignore' })
    try {
      await until(async () => (await fetch(`http://127.0.0.1:${port}/api/v1/status/`).catch(() => null))?.status === 200)
      const before = statSync(installed).ino
      // Writing into a running executable fails with ETXTBSY; this used to, after the unit was rewritten.
      const res = run('install', '--root', root, '--json')
      expect(res.code, res.err).toBe(0)
      expect(JSON.parse(res.out).actions.binary).toBe('copied')
      expect(statSync(installed).ino).not.toBe(before)
      expect(statSync(installed).size).toBe(statSync(BINARY).size)
      expect(statSync(installed).mode & 0o777).toBe(0o755)
      // The running one goes on until restarted; nothing is left beside the binary.
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/status/`)).status).toBe(200)
      expect(readdirSync(join(root, 'usr/local/bin'))).toEqual(['berth'])
    } finally {
      old.kill()
      await old.exited
      rmSync(root, { recursive: true, force: true })
    }
  }, 60_000)

  it('changes nothing when something is in the way', () => {
    // A fresh install: the unit's place is taken by a folder.
    const fresh = mkdtempSync(join(tmpdir(), 'berth-root-'))
    mkdirSync(join(fresh, 'etc/systemd/system/berth.service'), { recursive: true })
    const res = run('install', '--root', fresh)
    expect(res.code).toBe(1)
    expect(res.err).toContain(`${join(fresh, 'etc/systemd/system/berth.service')} is a folder`)
    expect(res.err).toContain('nothing was changed')
    for (const path of ['etc/berth', 'var/lib/berth', 'usr/local/bin', 'etc/sysctl.d']) expect(existsSync(join(fresh, path)), path).toBe(false)

    // An upgrade: the old unit stays as it was when the sysctl folder cannot be made.
    const upgrade = mkdtempSync(join(tmpdir(), 'berth-root-'))
    expect(run('install', '--root', upgrade, '--no-binary').code).toBe(0)
    const unit = join(upgrade, 'etc/systemd/system/berth.service')
    writeFileSync(unit, '# the previous version\n')
    rmSync(join(upgrade, 'etc/sysctl.d'), { recursive: true })
    writeFileSync(join(upgrade, 'etc/sysctl.d'), 'not a folder')
    const failed = run('install', '--root', upgrade)
    expect(failed.code).toBe(1)
    expect(failed.err).toContain(`${join(upgrade, 'etc/sysctl.d')} is not a folder`)
    expect(readFileSync(unit, 'utf8')).toBe('# the previous version\n')
    expect(existsSync(join(upgrade, 'usr/local/bin/berth'))).toBe(false)
    expect(readdirSync(join(upgrade, 'etc/systemd/system')).sort()).toEqual(['berth.service', 'berth.socket'])
  })

  it('never overwrites an existing config', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    mkdirSync(join(root, 'etc/berth'), { recursive: true })
    writeFileSync(join(root, 'etc/berth/berth.toml'), '[server]\nlisten = "127.0.0.1:1234"\n')
    const res = run('install', '--root', root, '--json', '--no-binary')
    expect(res.code).toBe(0)
    expect(JSON.parse(res.out).actions).toMatchObject({ config: 'kept', binary: 'skipped' })
    expect(readFileSync(join(root, 'etc/berth/berth.toml'), 'utf8')).toBe('[server]\nlisten = "127.0.0.1:1234"\n')
    expect(existsSync(join(root, 'usr/local/bin/berth'))).toBe(false)
    // berth.socket holds the kept config's listeners: its HTTP address, DNS at its default, no HTTPS.
    const socket = readFileSync(join(root, 'etc/systemd/system/berth.socket'), 'utf8')
    expect(socket.split('\n').filter((l) => l.startsWith('Listen'))).toEqual(['ListenStream=127.0.0.1:1234', 'ListenStream=0.0.0.0:5353', 'ListenDatagram=0.0.0.0:5353'])
  })

  it('writes a unit that systemd-analyze verify accepts without a warning', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    expect(run('install', '--root', root).code).toBe(0)
    // Verify a copy whose ExecStart names the binary just installed under the root: verify checks
    // that the command exists, and a --root tree would also need all of systemd's own units.
    const dir = join(root, 'verify')
    mkdirSync(dir)
    writeFileSync(join(dir, 'berth.service'), renderUnit(join(root, 'usr/local/bin/berth')))
    writeFileSync(join(dir, 'berth.socket'), readFileSync(join(root, 'etc/systemd/system/berth.socket'), 'utf8'))
    const verify = spawnSync(['systemd-analyze', 'verify', join(dir, 'berth.service'), join(dir, 'berth.socket')], { stdout: 'pipe', stderr: 'pipe' })
    expect(verify.exitCode).toBe(0)
    expect((verify.stdout.toString() + verify.stderr.toString()).trim()).toBe('')
  })

  it('the unit restarts on failure, is hardened, and can still reach Docker', () => {
    const unit = renderUnit()
    expect(unit).toMatch(/^Restart=on-failure$/m)
    expect(unit).toMatch(/^ProtectSystem=strict$/m)
    expect(unit).toMatch(/^NoNewPrivileges=yes$/m)
    expect(unit).toMatch(/^ReadWritePaths=.*\/var\/lib\/berth.*\/run\/docker\.sock/m)
    // The files API and restores write into the sites' Docker volumes.
    expect(unit).toMatch(/^ReadWritePaths=.*-\/var\/lib\/docker\/volumes/m)
    expect(unit).toMatch(/^After=.*docker\.service/m)
    expect(unit).toMatch(/^RestrictAddressFamilies=.*AF_UNIX/m)
    // Its seccomp filter answers openat2 with ENOSYS and refuses setgid bits (systemd-unit.solo.e2e).
    expect(unit).not.toMatch(/^RestrictSUIDSGID=/m)
    // Berth says when it is ready and that it is alive (drivers/systemd/notify.ts); a hung one is restarted.
    expect(unit).toMatch(/^Type=notify$/m)
    expect(unit).toMatch(/^WatchdogSec=30s$/m)
    expect(unit).toMatch(/^Wants=.*berth\.socket/m)
  })

  it('the committed systemd/berth.service and berth.socket are the rendered units', () => {
    expect(readFileSync(join(import.meta.dirname, '..', 'systemd', 'berth.service'), 'utf8')).toBe(renderUnit())
    expect(readFileSync(join(import.meta.dirname, '..', 'systemd', 'berth.socket'), 'utf8')).toBe(renderSocketUnit())
  })
})

describe('berth upgrade', () => {
  it('replaces the installed binary with one that runs, and changes nothing for a file that does not', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-upgrade-'))
    const installed = join(root, 'berth')
    writeFileSync(installed, '#!/bin/sh\necho old\n', { mode: 0o755 })
    // Not an executable for this machine (a truncated download, say): refused, nothing changed.
    const broken = join(root, 'berth-broken')
    writeFileSync(broken, readFileSync(BINARY).subarray(0, 4096), { mode: 0o755 })
    const refused = run('upgrade', broken, '--binary', installed, '--no-restart')
    expect(refused.code).toBe(1)
    expect(refused.err).toContain(`${broken} does not run as berth`)
    expect(refused.err).toContain('nothing was changed')
    expect(readFileSync(installed, 'utf8')).toBe('#!/bin/sh\necho old\n')
    expect(run('upgrade', join(root, 'missing'), '--binary', installed).err).toContain('is not a file; nothing was changed')

    const done = run('upgrade', BINARY, '--binary', installed, '--no-restart', '--json')
    expect(done.code, done.err).toBe(0)
    expect(JSON.parse(done.out)).toMatchObject({ binary: installed, restart: 'skipped (--no-restart): run systemctl restart berth' })
    expect(statSync(installed).size).toBe(statSync(BINARY).size)
    expect(statSync(installed).mode & 0o777).toBe(0o755)
    expect(readdirSync(root).sort()).toEqual(['berth', 'berth-broken'])
    rmSync(root, { recursive: true, force: true })
  }, 30_000)

  it('takes exactly one FILE', () => {
    const res = run('upgrade')
    expect(res.code).toBe(2)
    expect(res.err).toContain('give exactly one FILE')
  })
})
