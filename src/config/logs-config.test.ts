import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './config'

/** The keys of sites' log rotation (issue 38, item 3; docs/configuration.md, [logs]). */
describe('logs.* keys', () => {
  it('default to 10 MiB, 5 kept, checked every 60 s', () => {
    expect(loadConfig({ file: null, env: {} }).logs).toEqual({ rotateBytes: 10_485_760, rotateKeep: 5, rotateIntervalSeconds: 60 })
  })

  it('are read from BERTH_LOGS_* variables', () => {
    const env = { BERTH_LOGS_ROTATE_BYTES: '65536', BERTH_LOGS_ROTATE_KEEP: '2', BERTH_LOGS_ROTATE_INTERVAL_SECONDS: '5' }
    expect(loadConfig({ file: null, env }).logs).toEqual({ rotateBytes: 65_536, rotateKeep: 2, rotateIntervalSeconds: 5 })
  })

  it.each([
    ['BERTH_LOGS_ROTATE_BYTES', '100', /logs\.rotate_bytes \(from BERTH_LOGS_ROTATE_BYTES\) must be at least 4096 bytes/],
    ['BERTH_LOGS_ROTATE_KEEP', '0', /logs\.rotate_keep \(from BERTH_LOGS_ROTATE_KEEP\) must be from 1 to 100/],
    ['BERTH_LOGS_ROTATE_KEEP', '101', /logs\.rotate_keep .* must be from 1 to 100/],
    ['BERTH_LOGS_ROTATE_INTERVAL_SECONDS', '0', /logs\.rotate_interval_seconds .* must be at least 1/],
    ['BERTH_LOGS_ROTATE_BYTES', 'ten', /BERTH_LOGS_ROTATE_BYTES must be an integer/],
  ])('refuses %s=%s, naming the key and what to give', (name, value, message) => {
    expect(() => loadConfig({ file: null, env: { [name]: value } })).toThrowError(ConfigError)
    expect(() => loadConfig({ file: null, env: { [name]: value } })).toThrowError(message)
  })
})
