import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Database } from '../../db/client.js'
import { bearerTokenMatches } from '../../notifications/credentials.js'
import { createDashboard } from '../../notifications/dashboard.js'
import { errorBodySchema, HttpError } from '../errors.js'
import { appUrlSchema } from './notifications/schemas.js'

const projectSchema = z
  .object({
    success: z.literal(true),
    projectId: z.string(),
    name: z.string(),
    whitelisted: z.boolean(),
    createdAt: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'Project' })

const projectParams = z.object({ id: z.uuid('must be a project id (UUID)') })

const projectAppSchema = z
  .object({ success: z.literal(true), projectId: z.string(), appUrl: z.string().describe('Normalized app URL') })
  .meta({ id: 'ProjectApp' })

const errorResponses = { 400: errorBodySchema, 401: errorBodySchema, 404: errorBodySchema, 503: errorBodySchema }

/**
 * Rejects requests without `Authorization: Bearer <token>`. With no token
 * configured the route group is switched off (503), which tells an operator
 * what to fix where 401 would suggest a wrong token.
 */
export function requireBearerToken(token: string | undefined, setting: 'ADMIN_TOKEN' | 'PLATFORM_TOKEN') {
  return async (request: { headers: { authorization?: string } }) => {
    if (!token) throw new HttpError(503, 'not_configured', `${setting} is not configured; these routes are disabled`)
    if (!bearerTokenMatches(request.headers.authorization, token)) {
      throw new HttpError(401, 'unauthorized', 'Authorization: Bearer <token> is missing or wrong', undefined, {
        'www-authenticate': 'Bearer',
      })
    }
  }
}

/** Dashboard operations for operators (`Authorization: Bearer <ADMIN_TOKEN>`); the CLI runs the same ones. */
export const adminRoutes: FastifyPluginAsyncZod<{ db: Database; adminToken: string | undefined }> = async (
  app,
  { db, adminToken },
) => {
  const dashboard = createDashboard({ db })
  app.addHook('onRequest', requireBearerToken(adminToken, 'ADMIN_TOKEN'))
  const common = { tags: ['admin'], security: [{ adminToken: [] }] }

  app.post(
    '/v1/admin/projects',
    {
      schema: {
        ...common,
        summary: 'Create a project',
        body: z.object(
          {
            name: z.string({ error: 'is required' }).trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
            whitelisted: z.boolean({ error: 'must be true or false' }).optional(),
          },
          { error: 'must be a JSON object' },
        ),
        response: { 201: projectSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const project = await dashboard.createProject(request.body)
      return reply.code(201).send({ success: true as const, ...project })
    },
  )

  app.patch(
    '/v1/admin/projects/:id',
    {
      schema: {
        ...common,
        summary: "Set a project's notification whitelist flag",
        params: projectParams,
        body: z.object({ whitelisted: z.boolean({ error: 'must be true or false' }) }, { error: 'must be a JSON object' }),
        response: { 200: projectSchema, ...errorResponses },
      },
    },
    async (request) => ({
      success: true as const,
      ...(await dashboard.setWhitelisted(request.params.id, request.body.whitelisted)),
    }),
  )

  app.delete(
    '/v1/admin/projects/:id',
    {
      schema: {
        ...common,
        summary: 'Delete a project',
        description: "Its API keys then answer 404 and its app URLs are released.",
        params: projectParams,
        response: {
          200: z.object({ success: z.literal(true), projectId: z.string(), deleted: z.literal(true) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ success: true as const, ...(await dashboard.deleteProject(request.params.id)) }),
  )

  app.post(
    '/v1/admin/projects/:id/apps',
    {
      schema: {
        ...common,
        summary: 'Register an app URL with a project',
        description: '201 when registered, 200 when it already was (same project), 409 when another project holds it.',
        params: projectParams,
        body: z.object({ app_url: appUrlSchema }, { error: 'must be a JSON object' }),
        response: {
          200: projectAppSchema,
          201: projectAppSchema,
          ...errorResponses,
          409: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const { projectId, appUrl, created } = await dashboard.addApp(request.params.id, request.body.app_url)
      return reply.code(created ? 201 : 200).send({ success: true as const, projectId, appUrl })
    },
  )

  app.post(
    '/v1/admin/projects/:id/api-keys',
    {
      schema: {
        ...common,
        summary: 'Create an API key',
        description: 'The key is in this response only; the service stores its SHA-256.',
        params: projectParams,
        response: {
          201: z
            .object({ success: z.literal(true), projectId: z.string(), keyId: z.string(), apiKey: z.string() })
            .meta({ id: 'CreatedApiKey' }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const created = await dashboard.createApiKey(request.params.id)
      return reply.code(201).header('cache-control', 'no-store').send({ success: true as const, ...created })
    },
  )

  app.delete(
    '/v1/admin/api-keys/:keyId',
    {
      schema: {
        ...common,
        summary: 'Revoke an API key',
        params: z.object({ keyId: z.uuid('must be an API key id (UUID)') }),
        response: {
          200: z.object({ success: z.literal(true), keyId: z.string(), projectId: z.string(), revoked: z.literal(true) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ success: true as const, ...(await dashboard.revokeApiKey(request.params.keyId)) }),
  )
}
