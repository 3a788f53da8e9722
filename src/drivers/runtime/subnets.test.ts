import { describe, expect, it } from 'vitest'
import { freeSiteSubnets, siteAddresses } from './subnets'

const take = (gen: Generator<string>, n: number) => Array.from({ length: n }, () => gen.next().value)

describe('freeSiteSubnets', () => {
  it('walks the pool in /28 steps', () => {
    expect(take(freeSiteSubnets('10.231.0.0/16', [], new Set()), 3)).toEqual(['10.231.0.0/28', '10.231.0.16/28', '10.231.0.32/28'])
  })

  it('skips blocks overlapping existing networks, wider or narrower, and those in `skip`', () => {
    const used = ['172.17.0.0/16', '10.231.0.0/28', '10.231.0.32/27', '10.231.0.88/30', 'fd00::/64']
    const gen = freeSiteSubnets('10.231.0.0/24', used, new Set(['10.231.0.16/28']))
    expect(take(gen, 3)).toEqual(['10.231.0.64/28', '10.231.0.96/28', '10.231.0.112/28'])
  })

  it('ends when the pool is used up', () => {
    expect([...freeSiteSubnets('10.0.0.0/27', ['10.0.0.0/28'], new Set())]).toEqual(['10.0.0.16/28'])
    expect([...freeSiteSubnets('10.0.0.0/24', ['10.0.0.0/8'], new Set())]).toEqual([])
  })

  it('rejects a pool smaller than one site network', () => {
    expect(() => freeSiteSubnets('10.0.0.0/29', [], new Set()).next()).toThrow(/smaller than one \/28/)
  })
})

describe('siteAddresses', () => {
  it('puts the gateway first and the site second', () => {
    expect(siteAddresses('10.231.1.240/28')).toEqual({ gateway: '10.231.1.241', container: '10.231.1.242' })
  })
})
