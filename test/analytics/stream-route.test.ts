import Fastify, { type FastifyInstance } from 'fastify'
import { connect } from 'node:net'
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClientSlots } from '../../src/http/client-slots.js'
import { createRefusalCounter } from '../../src/http/refusals.js'
import { streamRoutes } from '../../src/http/routes/stream.js'
import type { AttributionEvent } from '../../src/store/events.js'
import type { StreamHub, Subscriber } from '../../src/stream/hub.js'

/**
 * The SSE route against a hub that acts at the worst moments: a heartbeat
 * and events while the subscription is still being set up (a resuming
 * client's replay), and a close before the answer has started. Nothing may
 * reach the socket before the headers, and no frame may be lost.
 */
const event = (id: number): AttributionEvent => ({
  id, type: 'commit', chainId: 1, code: 'gamma', registry: 'canonical', fromBlock: id, toBlock: id, attributions: 1, at: new Date(0).toISOString(),
})

let behaviour: (subscriber: Subscriber) => void | Promise<void> = () => {}
let unsubscribed = 0
const hub = {
  async subscribe(subscriber: Subscriber) {
    await behaviour(subscriber)
    return () => void unsubscribed++
  },
} as unknown as StreamHub
const perClient = createClientSlots(100)

let app: FastifyInstance
let url: string

beforeAll(async () => {
  app = Fastify()
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  await app.register(streamRoutes, { hub, retryMs: 2_000, perClient, maxPerClient: 100, refusals: createRefusalCounter(undefined) })
  url = await app.listen({ host: '127.0.0.1', port: 0 })
})

afterAll(async () => {
  await app.close()
})

/** Reads the stream until it ends or `until` holds for the text received. */
async function read(until: (text: string) => boolean) {
  const controller = new AbortController()
  const response = await fetch(`${url}/v1/attribution/stream`, { signal: controller.signal })
  let text = ''
  const decoder = new TextDecoder()
  try {
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true })
      if (until(text)) break
    }
  } finally {
    controller.abort()
  }
  return { status: response.status, type: response.headers.get('content-type'), text }
}

describe('GET /v1/attribution/stream, subscription being set up', () => {
  it('holds what the hub sends while subscribing, drops early heartbeats, then writes it after the headers', async () => {
    behaviour = (subscriber) => {
      subscriber.heartbeat()
      subscriber.send(event(7))
      subscriber.heartbeat()
      subscriber.reset('more than 1000 events were missed', 9)
    }
    const { status, type, text } = await read((received) => received.includes('event: reset'))
    expect(status).toBe(200)
    expect(type).toBe('text/event-stream; charset=utf-8')
    expect(text).toBe(
      'retry: 2000\n\n' +
        `id: 7\nevent: commit\ndata: ${JSON.stringify(event(7))}\n\n` +
        `id: 9\nevent: reset\ndata: ${JSON.stringify({ reason: 'more than 1000 events were missed', lastEventId: 9 })}\n\n`,
    )
  })

  it('answers and ends at once when the hub closed the subscriber before the answer started', async () => {
    behaviour = (subscriber) => {
      subscriber.send(event(3))
      subscriber.close()
    }
    const { status, text } = await read(() => false)
    expect(status).toBe(200)
    expect(text).toBe(`retry: 2000\n\nid: 3\nevent: commit\ndata: ${JSON.stringify(event(3))}\n\n`)
  })
})

describe('a client gone while its subscription was being set up', () => {
  it('gives back its subscription and its per-client slot (they were kept for good: a hub slot lost per such client)', async () => {
    let gone!: () => void
    const clientGone = new Promise<void>((resolve) => (gone = resolve))
    // the hub answers only after the client has disconnected (a slow replay of what it missed)
    behaviour = () => clientGone
    const before = unsubscribed
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(url).port) })
    socket.on('error', () => {})
    socket.write('GET /v1/attribution/stream HTTP/1.1\r\nHost: x\r\n\r\n')
    await expect.poll(() => perClient.heldBy('127.0.0.1')).toBe(1)
    const openConnections = () => new Promise<number>((resolve) => app.server.getConnections((_error, count) => resolve(count)))
    const withTheStream = await openConnections()
    socket.destroy()
    // the server has seen the socket close before the hub answers
    await expect.poll(openConnections).toBeLessThan(withTheStream)
    gone()
    await expect.poll(() => ({ unsubscribed: unsubscribed - before, held: perClient.heldBy('127.0.0.1') })).toEqual({ unsubscribed: 1, held: 0 })
  })
})

describe('HEAD /v1/attribution/stream', () => {
  it('answers the stream’s headers and ends, never subscribing (the hostile-request fuzz found HEAD holding a stream open)', async () => {
    let subscribed = false
    behaviour = () => {
      subscribed = true
    }
    const response = await fetch(`${url}/v1/attribution/stream?code=relay`, { method: 'HEAD', signal: AbortSignal.timeout(2_000) })
    expect([response.status, response.headers.get('content-type'), subscribed]).toEqual([200, 'text/event-stream; charset=utf-8', false])
  })
})
