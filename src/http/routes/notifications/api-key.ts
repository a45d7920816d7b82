import type { FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { AppAccessControl, KeyProject } from '../../../notifications/access.js'

/** The Fastify instance a notification route is registered on. */
export type AppRoutes = Parameters<FastifyPluginAsyncZod>[0]

/** The app's API key (`x-api-key`), resolved before the body is validated: 401 or 404 first, then 400. */
export type ApiKeyGate = {
  /** preValidation hook: resolves the key or throws the domain error (401 missing/unknown/revoked, 404 project deleted). */
  require(request: FastifyRequest): Promise<void>
  /** The project of the request's key; only for routes behind `require`. */
  projectOf(request: FastifyRequest): KeyProject
}

export function createApiKeyGate(access: AppAccessControl): ApiKeyGate {
  const projects = new WeakMap<FastifyRequest, KeyProject>()
  return {
    async require(request) {
      projects.set(request, await access.resolveKey(request.headers['x-api-key']))
    },
    projectOf(request) {
      const project = projects.get(request)
      if (!project) throw new Error('API key hook did not run for this route')
      return project
    },
  }
}
