import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { AttributionEvent } from '../../store/events.js'
import { TooManySubscribersError, type StreamHub } from '../../stream/hub.js'
import { clientKey } from '../client.js'
import type { ClientSlots } from '../client-slots.js'
import { badRequest, errorBodySchema } from '../errors.js'
import { tooManyRequests, type RefusalCounter } from '../refusals.js'

/** A client that stops reading is dropped once this much is queued for it, rather than held in memory. */
const MAX_BUFFERED_BYTES = 1_048_576

const lastEventIdSchema = z.string().regex(/^\d{1,18}$/, 'must be an event id (digits)')

/** How long a client refused a stream is asked to wait before it tries again. */
const REFUSED_RETRY_MS = 5_000

export type StreamRoutesOptions = {
  hub: StreamHub
  retryMs: number
  /** Open streams per client (STREAM_MAX_SUBSCRIBERS_PER_IP), counted in this process. */
  perClient: ClientSlots
  maxPerClient: number
  refusals: RefusalCounter
}

export const streamRoutes: FastifyPluginAsyncZod<StreamRoutesOptions> = async (app, { hub, retryMs, perClient, maxPerClient, refusals }) => {
  app.get(
    '/v1/attribution/stream',
    {
      schema: {
        tags: ['attribution'],
        summary: 'Live attributions (server-sent events)',
        description:
          '`text/event-stream`. Event `commit`: a code gained attribution rows when a block range committed; event `rollback`: ' +
          'a reorg took them away (every block from `fromBlock` up). Data is JSON `{ id, type, chainId, code, registry, fromBlock, toBlock, attributions, at }`; ' +
          'the SSE `id` is the event id. A comment line is sent as a heartbeat. Reconnect with `Last-Event-ID` (or `lastEventId`) ' +
          'to receive what was missed; when that cannot be replayed whole (more than 1,000 events, or events older than the 7 days kept), ' +
          'event `reset` `{ reason, lastEventId }` comes instead: re-read the figures, the stream goes on live from there. ' +
          `Answers 429 when this client (its IP, IPv6 per /64) already holds ${maxPerClient} open streams, ` +
          '503 when the server already holds its maximum of subscribers; both with `Retry-After`.',
        querystring: z.object({
          code: z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters').optional().describe('Only this code’s events'),
          lastEventId: lastEventIdSchema.optional(),
        }),
        headers: z.object({ 'last-event-id': z.string().optional() }).passthrough(),
        response: { 200: z.string().describe('text/event-stream'), 400: errorBodySchema, 429: errorBodySchema, 503: errorBodySchema },
      },
    },
    async (request, reply) => {
      const resumeFrom = request.headers['last-event-id'] ?? request.query.lastEventId
      if (resumeFrom !== undefined && !lastEventIdSchema.safeParse(resumeFrom).success) {
        throw badRequest('Last-Event-ID', 'must be an event id (digits)')
      }
      // a HEAD asks what a GET would answer without its body: the stream's headers, then the end (never a subscription)
      if (request.method === 'HEAD') return reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-store').send('')
      // one client cannot take every slot of the hub: its own streams are capped first
      const releaseSlot = perClient.tryAcquire(clientKey(request.ip))
      if (!releaseSlot) {
        refusals.refused('stream_per_client')
        throw tooManyRequests(`stream: at most ${maxPerClient} open streams per client`, REFUSED_RETRY_MS)
      }
      const raw = reply.raw
      // until the subscription is accepted nothing may reach the socket (a write would send default headers),
      // so frames wait in `pending`; heartbeats before then are dropped
      let headersSent = false
      let open = true
      const pending: string[] = []
      const write = (text: string) => {
        if (!open) return
        if (!headersSent) return void pending.push(text)
        raw.write(text)
        if (raw.writableLength > MAX_BUFFERED_BYTES) close()
      }
      const close = () => {
        if (!open) return
        open = false
        if (headersSent) raw.end()
      }
      const subscriber = {
        code: request.query.code,
        send: (event: AttributionEvent) => write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
        // the id moves the client's Last-Event-ID on, so its next reconnect resumes from here
        reset: (reason: string, latestId: number) => write(`id: ${latestId}\nevent: reset\ndata: ${JSON.stringify({ reason, lastEventId: latestId })}\n\n`),
        heartbeat: () => headersSent && write(': heartbeat\n\n'),
        close,
      }
      let unsubscribe: () => void
      try {
        unsubscribe = await hub.subscribe(subscriber, resumeFrom === undefined ? undefined : Number(resumeFrom))
      } catch (error) {
        releaseSlot()
        if (error instanceof TooManySubscribersError) refusals.refused('stream_total')
        throw error
      }
      // the client went away, or the stream ended (the hub closed it, a slow reader was dropped): once
      const end = () => {
        open = false
        unsubscribe()
        releaseSlot()
      }
      // a client gone while it was subscribing sees no 'close' from here on: its subscription and slot are given back now
      if (request.raw.socket.destroyed) {
        end()
        return reply.hijack()
      }
      reply.hijack()
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        // proxies (nginx) must not buffer the stream
        'x-accel-buffering': 'no',
      })
      headersSent = true
      raw.write(`retry: ${retryMs}\n\n`)
      for (const text of pending.splice(0)) raw.write(text)
      // closed while subscribing (the hub sent everyone to resume): the client reconnects with Last-Event-ID
      if (!open) raw.end()
      request.raw.on('close', end)
      raw.on('close', end)
    },
  )
}
