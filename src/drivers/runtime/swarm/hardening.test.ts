import { describe, expect, it } from 'vitest'
import { IMAGES } from '../images'
import { apiAtLeast, noNewPrivilegesAdvice, type EngineSecurity } from './hardening'
import { serviceNames, serviceSpec } from './service-spec'

const engine = (over: Partial<EngineSecurity> = {}): EngineSecurity => ({ engineVersion: '20.10.24', apiVersion: '1.41', securityOptions: ['name=seccomp,profile=default'], daemonJson: null, ...over })

function specOn(apiVersion: string) {
  const site = { siteId: 'id-a', slug: 'a', hostingType: 'shared' as const, image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null }
  const spec = serviceSpec({ instanceId: 't', spec: site, names: serviceNames('t', 'a'), nodeId: 'nb', swarmNodeId: 'sw', readonlyRootfs: true, apiVersion }) as unknown as {
    TaskTemplate: { ContainerSpec: { Privileges?: unknown; Mounts: { Type: string }[] }; Resources: Record<string, unknown> }
  }
  return spec.TaskTemplate
}

describe('a site task\'s hardening on Swarm', () => {
  it('compares API versions by number, not as text', () => {
    expect(apiAtLeast('1.41', '1.44')).toBe(false)
    expect(apiAtLeast('1.44', '1.44')).toBe(true)
    expect(apiAtLeast('1.100', '1.52')).toBe(true)
    expect(apiAtLeast('2.0', '1.52')).toBe(true)
  })

  it('asks the service for no-new-privileges from API 1.44 and for no swap from API 1.52, and for neither before', () => {
    expect(specOn('1.41').ContainerSpec.Privileges).toBeUndefined()
    expect(specOn('1.41').Resources).not.toHaveProperty('SwapBytes')
    expect(specOn('1.44').ContainerSpec.Privileges).toEqual({ NoNewPrivileges: true })
    expect(specOn('1.51').Resources).not.toHaveProperty('SwapBytes')
    expect(specOn('1.52').Resources).toMatchObject({ SwapBytes: 0, Limits: { MemoryBytes: 128 * 1024 * 1024 } })
  })

  it('warns with the fix on an old engine without the daemon-wide setting, and not once it is set or not needed', () => {
    const advice = noNewPrivilegesAdvice(engine(), 'node')!
    expect(advice).toContain('Docker 20.10.24, API 1.41')
    expect(advice).toContain('Add "no-new-privileges": true to /etc/docker/daemon.json on this box')
    expect(advice).toContain('restart Docker')
    expect(noNewPrivilegesAdvice(engine(), 'control plane')).toContain('on this box and on every node')
    expect(noNewPrivilegesAdvice(engine({ daemonJson: '{"no-new-privileges": true, "log-driver": "json-file"}' }), 'node')).toBeNull()
    expect(noNewPrivilegesAdvice(engine({ daemonJson: '{"no-new-privileges": false}' }), 'node')).not.toBeNull()
    expect(noNewPrivilegesAdvice(engine({ daemonJson: 'not json' }), 'node')).not.toBeNull()
    // Docker 24 (API 1.43) lists the setting: its word counts, not the file's.
    expect(noNewPrivilegesAdvice(engine({ apiVersion: '1.43', engineVersion: '24.0.7', securityOptions: ['name=seccomp,profile=default', 'name=no-new-privileges'] }), 'node')).toBeNull()
    expect(noNewPrivilegesAdvice(engine({ apiVersion: '1.43', engineVersion: '24.0.7', daemonJson: '{"no-new-privileges": true}' }), 'node')).toContain('API 1.43')
    // Docker 25 (API 1.44): the service's spec carries it.
    expect(noNewPrivilegesAdvice(engine({ apiVersion: '1.44', engineVersion: '25.0.3' }), 'node')).toBeNull()
  })
})
