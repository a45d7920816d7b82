import type { Config } from '../config/env.js'
import type { Redis } from '../redis/client.js'
import { createRateLimiter } from '../redis/rate-limit.js'
import { ValidationBusyError } from '../validation/errors.js'
import { tooManyRequests, type RefusalCounter } from './refusals.js'

type BudgetConfig = Pick<Config, 'QUEUE_PREFIX' | 'VALIDATE_RATE_LIMIT_MAX' | 'VALIDATE_RATE_LIMIT_WINDOW_MS' | 'VALIDATE_RPC_MAX'>

/**
 * What anonymous validation may spend of the operator's node: the lookups
 * the index cannot answer, counted per client (VALIDATE_RATE_LIMIT_*, 429)
 * and for every client together (VALIDATE_RPC_MAX per the same window, 503),
 * in Redis so every API instance shares both. The per-client count comes
 * first, so a client over its own budget spends nothing of everyone's.
 *
 * While Redis is down each process counts on its own: the node's quota is
 * the operator's money, and admitting blind would let anyone spend it.
 */
export function createValidationBudget(options: {
  config: BudgetConfig
  redis: Redis
  refusals: RefusalCounter
  logger: { warn(details: object, message: string): void }
}) {
  const { config, refusals } = options
  const windowSeconds = config.VALIDATE_RATE_LIMIT_WINDOW_MS / 1000
  const common = { redis: options.redis, prefix: config.QUEUE_PREFIX, windowMs: config.VALIDATE_RATE_LIMIT_WINDOW_MS, logger: options.logger }
  const perClient = createRateLimiter({ ...common, name: 'validate-rate', max: config.VALIDATE_RATE_LIMIT_MAX, whenUnavailable: 'count-locally' })
  const allClients = createRateLimiter({ ...common, name: 'validate-node', max: config.VALIDATE_RPC_MAX, whenUnavailable: 'count-locally' })

  /** Admits one lookup that asks the node, or throws the 429 (this client) or the 503 (everyone's budget). */
  return async function admitNodeLookup(client: string | undefined): Promise<void> {
    const own = await perClient.hit(client ?? 'unknown')
    if (!own.allowed) {
      refusals.refused('validate_per_client')
      throw tooManyRequests(
        `validation: more than ${own.limit} lookups of hashes the index does not hold in ${windowSeconds} s from this client`,
        own.resetMs,
        { 'x-ratelimit-limit': own.limit, 'x-ratelimit-remaining': 0 },
      )
    }
    const everyone = await allClients.hit('all')
    if (!everyone.allowed) {
      refusals.refused('validate_node_total')
      throw new ValidationBusyError(`validation: the node's budget of ${everyone.limit} lookups in ${windowSeconds} s is spent`, everyone.resetMs)
    }
  }
}
