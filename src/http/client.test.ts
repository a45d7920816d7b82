import { describe, expect, it } from 'vitest'
import { clientKey, trustProxyFunction } from './client.js'
import { createClientSlots } from './client-slots.js'

describe('clientKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:aa:bb::1', '2001:db8:aa:bb::'],
    ['2001:db8:aa:bb:ffff:ffff:ffff:ffff', '2001:db8:aa:bb::'],
    ['2001:DB8:AA:BB::1', '2001:db8:aa:bb::'],
    ['2001:db8:aa:cc::1', '2001:db8:aa:cc::'],
  ])('%s is the client %s (IPv6 per /64, mapped IPv4 as IPv4)', (ip, key) => {
    expect(clientKey(ip)).toBe(key)
  })
})

describe('trustProxyFunction', () => {
  it.each([
    [undefined, '127.0.0.1', false],
    ['true', '198.51.100.1', true],
    // Fastify 5 trusts no socket peer for a hop count; the connection cap agrees with it
    ['1', '127.0.0.1', false],
    ['127.0.0.1', '127.0.0.1', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['10.0.0.0/8, 192.0.2.1', '10.1.2.3', true],
    ['10.0.0.0/8, 192.0.2.1', '192.0.2.1', true],
    ['10.0.0.0/8, 192.0.2.1', '192.0.2.2', false],
  ])('TRUST_PROXY=%s trusts the peer %s: %s', (setting, address, trusted) => {
    expect(trustProxyFunction(setting)(address, 0)).toBe(trusted)
  })
})

describe('createClientSlots', () => {
  it('gives a client at most max slots, each released once, and other clients their own', () => {
    const slots = createClientSlots(2)
    const first = slots.tryAcquire('a')!
    const second = slots.tryAcquire('a')!
    expect(slots.tryAcquire('a')).toBeUndefined()
    expect(slots.tryAcquire('b')).toBeTypeOf('function')
    first()
    first()
    expect(slots.heldBy('a')).toBe(1)
    expect(slots.tryAcquire('a')).toBeTypeOf('function')
    expect(slots.tryAcquire('a')).toBeUndefined()
    second()
    expect(slots.heldBy('a')).toBe(1)
  })

  it('forgets a client that holds nothing', () => {
    const slots = createClientSlots(1)
    slots.tryAcquire('a')!()
    expect(slots.clients()).toBe(0)
  })
})
