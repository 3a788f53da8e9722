import { spawnSync } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { renderUnit } from '../src/install/unit'
import { BINARY } from './helpers/binary'

const run = (...args: string[]) => {
  const p = spawnSync([BINARY, ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH } })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe('berth install', () => {
  it('lays out config, data folder, binary and unit under --root', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    const res = run('install', '--root', root, '--json')
    expect(res.code).toBe(0)
    const out = JSON.parse(res.out)
    expect(out.actions).toMatchObject({ config: 'written', unit: 'written', binary: 'copied' })
    expect(statSync(join(root, 'var/lib/berth')).mode & 0o777).toBe(0o750)
    expect(statSync(join(root, 'usr/local/bin/berth')).mode & 0o111).toBeTruthy()
    expect(readFileSync(join(root, 'etc/systemd/system/berth.service'), 'utf8')).toBe(renderUnit())
    const config = readFileSync(join(root, 'etc/berth/berth.toml'), 'utf8')
    expect(config).toContain('data_dir = "/var/lib/berth"')
    // The written config is a valid config for the installed binary.
    const check = spawnSync([join(root, 'usr/local/bin/berth'), 'migrate', '--dry-run', '--json', '--config', join(root, 'etc/berth/berth.toml'), '--data-dir', join(root, 'var/lib/berth')], { stdout: 'pipe', stderr: 'pipe' })
    expect(check.exitCode, check.stderr.toString()).toBe(0)
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
  })

  it('writes a unit that systemd-analyze verify accepts without a warning', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-root-'))
    expect(run('install', '--root', root).code).toBe(0)
    // Verify a copy whose ExecStart names the binary just installed under the root: verify checks
    // that the command exists, and a --root tree would also need all of systemd's own units.
    const dir = join(root, 'verify')
    mkdirSync(dir)
    writeFileSync(join(dir, 'berth.service'), renderUnit(join(root, 'usr/local/bin/berth')))
    const verify = spawnSync(['systemd-analyze', 'verify', join(dir, 'berth.service')], { stdout: 'pipe', stderr: 'pipe' })
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
  })

  it('the committed systemd/berth.service is the rendered unit', () => {
    expect(readFileSync(join(import.meta.dirname, '..', 'systemd', 'berth.service'), 'utf8')).toBe(renderUnit())
  })
})
