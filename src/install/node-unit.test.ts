import { spawnSync } from 'bun'
import { describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { renderNodeUnit } from './node-unit'

describe('berth-node.service', () => {
  it('runs berth node serve on the data folder, always restarted, and systemd-analyze verify accepts it', () => {
    const unit = renderNodeUnit('/usr/local/bin/berth', '/srv/berth-node')
    expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/berth node serve --data \/srv\/berth-node$/m)
    expect(unit).toMatch(/^Restart=always$/m)
    // berth node serve says READY=1 once it listens: systemctl start returns then, or fails.
    expect(unit).toMatch(/^Type=notify$/m)
    expect(unit).toMatch(/^NotifyAccess=main$/m)
    // Never given up on: a fast-failing agent would hit systemd's default start limit for good.
    expect(unit).toMatch(/^StartLimitIntervalSec=0$/m)
    expect(unit).toMatch(/^ReadWritePaths=\/srv\/berth-node -\/run\/docker\.sock/m)
    expect(unit).toMatch(/^WantedBy=multi-user\.target$/m)
    const dir = mkdtempSync(join(tmpdir(), 'berth-node-unit-'))
    try {
      // verify checks that the command exists: /bin/true stands in for the binary.
      writeFileSync(join(dir, 'berth-node.service'), renderNodeUnit('/bin/true', dir))
      const verify = spawnSync(['systemd-analyze', 'verify', join(dir, 'berth-node.service')], { stdout: 'pipe', stderr: 'pipe' })
      expect((verify.stdout.toString() + verify.stderr.toString()).trim()).toBe('')
      expect(verify.exitCode).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
