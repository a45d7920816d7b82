import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Database } from '../../db/client.js'
import { readEndpointStates } from '../../indexer-status/endpoints.js'
import { readIndexerStatus } from '../../indexer-status/status.js'
import type { Redis } from '../../redis/client.js'

const endpointSchema = z.object({
  url: z.string().describe('The endpoint URL with keys redacted (userinfo, query values, key-looking path segments shown as ***)'),
  state: z.enum(['healthy', 'sick', 'probing']).describe('healthy: gets work; sick: routed around until a probe answers'),
  itemsPerSecond: z.number().nullable().describe('Blocks, receipts and headers delivered per busy second (moving average); null until measured'),
  bytesPerSecond: z.number().nullable(),
  items: z.number().describe('Items delivered since the reporting process started'),
  errors: z.number().describe('Works that failed here (or found the endpoint behind) and went to another endpoint'),
  failuresInRow: z.number(),
  lastError: z.string().nullable(),
  concurrency: z.number().nullable().describe("Requests in flight the endpoint's transport allows now"),
  blockBatchSize: z.number().nullable().describe('Blocks per batch the transport asks now'),
  at: z.string().describe('When a fetching process last reported it'),
})

const chainStatusSchema = z.object({
  chainId: z.number(),
  headBlock: z.number().nullable().describe('Latest block the follower saw on the node'),
  headUpdatedAt: z.string().nullable(),
  indexedBlock: z.number().nullable().describe('Every block up to this one is indexed'),
  lagBlocks: z.number().nullable().describe('headBlock − indexedBlock (includes the confirmation depth)'),
  lagSeconds: z.number().nullable().describe('Age of the indexed block while behind; 0 when caught up'),
  rangesPending: z.number(),
  rangesStuck: z.number().describe('Pending ranges that failed at least stuckAfterAttempts times'),
  lastMinute: z.object({ ranges: z.number(), blocks: z.number(), transactions: z.number(), attributions: z.number() }),
  lastError: z
    .object({ message: z.string(), at: z.string(), fromBlock: z.number(), toBlock: z.number(), attempts: z.number() })
    .nullable()
    .describe('The most recent failure recorded on a range still in the table'),
  endpoints: z.array(endpointSchema).nullable().describe('The RPC endpoints of the chain and their state; null when Redis could not be read'),
})

const statusSchema = z
  .object({ stuckAfterAttempts: z.number().describe('STUCK_RANGE_ATTEMPTS'), chains: z.array(chainStatusSchema) })
  .meta({ id: 'IndexerStatus' })

/** What an operator checks first: per chain head, indexed block, lag, pending and stuck ranges, throughput, last error. */
export const indexerStatusRoutes: FastifyPluginAsyncZod<{ db: Database; redis: Redis; queuePrefix: string; chainIds: number[]; stuckAfterAttempts: number }> = async (
  app,
  { db, redis, queuePrefix, chainIds, stuckAfterAttempts },
) => {
  app.get(
    '/v1/indexer/status',
    {
      schema: {
        tags: ['indexer'],
        summary: 'Indexer progress and health per chain',
        description: 'Read from chain_state and the ranges table through its indexes; never cached.',
        response: { 200: statusSchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'no-store')
      // the endpoints are a detail of the status: Redis down leaves them null, the rest still answers
      const endpoints = await readEndpointStates(redis, queuePrefix, chainIds).catch(() => undefined)
      return readIndexerStatus(db.$client, { chainIds, stuckAfterAttempts, endpoints })
    },
  )
}
