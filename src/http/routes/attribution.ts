import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { validationRequestSchema, type ValidationRequest } from '../../validation/request.js'
import type { Validator } from '../../validation/validate.js'
import { clientKey } from '../client.js'
import { errorBodySchema } from '../errors.js'

const registrySchema = z.object({ chainId: z.number(), address: z.string() })

const validationSchema = z
  .object({
    attributed: z.boolean().describe('True when a well-formed ERC-8021 suffix attributes at least one code'),
    type: z.enum(['transaction', 'userOperation']),
    hash: z.string().describe('The hash asked about'),
    chainId: z.number(),
    transactionHash: z.string().describe('The transaction itself, or the bundle that carried the UserOperation'),
    userOpHash: z.string().optional(),
    blockNumber: z.number(),
    status: z.enum(['success', 'reverted']).describe('For a UserOperation, the `success` of its UserOperationEvent'),
    schemaId: z.number().optional(),
    codes: z.array(
      z.object({
        code: z.string(),
        role: z.enum(['code', 'app', 'wallet', 'service']).describe('`code` for schemas 0 and 1; the CBOR role for schema 2'),
        valid: z.boolean().describe('1 to 32 characters of 0-9a-z_'),
        registered: z.boolean().describe('Present in this service’s builder-code registry (never for codes of a custom registry)'),
        walletAddress: z.string().optional().describe('Owner of a registered code'),
      }),
    ),
    codeRegistry: registrySchema.optional().describe('Schema 1: the custom registry of the codes'),
    registries: z.object({ app: registrySchema.optional(), wallet: registrySchema.optional() }).optional(),
    suffix: z.string().optional().describe('The ERC-8021 suffix, hex'),
    suffixGas: z.number().optional().describe('Calldata gas of the suffix (EIP-2028)'),
    malformed: z.object({ reason: z.string() }).optional().describe('Present when the marker is there but the suffix cannot be read'),
    source: z.enum(['index', 'rpc']),
  })
  .meta({ id: 'AttributionValidation' })

const description =
  'From the index when it holds the hash (`source: "index"`), otherwise from the chain over RPC (`source: "rpc"`): a transaction by its receipt; ' +
  'a UserOperation through its `UserOperationEvent` (searched back from the head over VALIDATE_LOG_WINDOW blocks) and the bundle that carried it. ' +
  'Found but unattributed → 200 with `attributed: false`; unknown hash → 404 (repeated without asking the node for VALIDATE_MISS_CACHE_MS); ' +
  'node failure → 502; node timeout → 504. Lookups that ask the node are limited per client IP (VALIDATE_RATE_LIMIT_*: 429) and for all clients ' +
  'together (VALIDATE_RPC_MAX, VALIDATE_RPC_CONCURRENCY: 503), both with `Retry-After`; answers from the index are not.'

const responses = {
  200: validationSchema,
  400: errorBodySchema,
  404: errorBodySchema,
  429: errorBodySchema,
  502: errorBodySchema,
  503: errorBodySchema,
  504: errorBodySchema,
}

/** Validation by hash. Its domain errors (400 chain, 404 unknown, 502/504 node, 503 busy) are mapped by the server's one error handler. */
export const attributionRoutes: FastifyPluginAsyncZod<{ validator: Validator }> = async (app, { validator }) => {
  const answer = (request: { ip: string }, query: ValidationRequest) => validator.validate(query, { client: clientKey(request.ip) })

  app.get(
    '/v1/attribution/validate',
    {
      schema: {
        tags: ['attribution'],
        summary: 'Validate the attribution of a transaction or UserOperation hash',
        description,
        querystring: validationRequestSchema,
        response: responses,
      },
    },
    async (request) => answer(request, request.query),
  )

  app.post(
    '/v1/attribution/validate',
    {
      schema: {
        tags: ['attribution'],
        summary: 'Validate the attribution of a hash (JSON body)',
        description,
        body: validationRequestSchema,
        response: responses,
      },
    },
    async (request) => answer(request, request.body),
  )
}
