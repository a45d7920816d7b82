import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Database } from '../../db/client.js'
import { readIndexerStatus } from '../../indexer-status/status.js'

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
})

const statusSchema = z
  .object({ stuckAfterAttempts: z.number().describe('STUCK_RANGE_ATTEMPTS'), chains: z.array(chainStatusSchema) })
  .meta({ id: 'IndexerStatus' })

/** What an operator checks first: per chain head, indexed block, lag, pending and stuck ranges, throughput, last error. */
export const indexerStatusRoutes: FastifyPluginAsyncZod<{ db: Database; chainIds: number[]; stuckAfterAttempts: number }> = async (
  app,
  { db, chainIds, stuckAfterAttempts },
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
      return readIndexerStatus(db.$client, { chainIds, stuckAfterAttempts })
    },
  )
}
