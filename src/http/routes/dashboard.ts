import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { notFound } from '../errors.js'

type Asset = { path: string; type: string }

const publicDir = (name: string) => fileURLToPath(new URL(`../../dashboard/public/${name}`, import.meta.url))
const uplotFile = (name: string) => createRequire(import.meta.url).resolve(`uplot/dist/${name}`)

/**
 * The page and the only files it may load. A fixed list (no directory
 * serving) means no path can reach anything else on disk, and uPlot comes
 * from node_modules so the page works with no network beyond this service.
 */
const ASSETS: Record<string, Asset> = {
  'dashboard.js': { path: publicDir('dashboard.js'), type: 'text/javascript; charset=utf-8' },
  'dashboard.css': { path: publicDir('dashboard.css'), type: 'text/css; charset=utf-8' },
  'uPlot.esm.js': { path: uplotFile('uPlot.esm.js'), type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { path: uplotFile('uPlot.min.css'), type: 'text/css; charset=utf-8' },
}
const PAGE: Asset = { path: publicDir('index.html'), type: 'text/html; charset=utf-8' }
const FAVICON: Asset = { path: publicDir('favicon.svg'), type: 'image/svg+xml' }

/** Everything the page needs is served from here; a CDN link would be refused. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type Loaded = { body: Buffer; type: string; etag: string }

/** Files are read once: they are part of the release, not data. */
function createAssetCache() {
  const loaded = new Map<string, Promise<Loaded>>()
  return (asset: Asset) => {
    let entry = loaded.get(asset.path)
    if (!entry) {
      entry = readFile(asset.path).then((body) => ({
        body,
        type: asset.type,
        etag: `"${createHash('sha1').update(body).digest('base64url')}"`,
      }))
      entry.catch(() => loaded.delete(asset.path))
      loaded.set(asset.path, entry)
    }
    return entry
  }
}

export const dashboardRoutes: FastifyPluginAsyncZod = async (app) => {
  const load = createAssetCache()

  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY)
    reply.header('x-content-type-options', 'nosniff')
    const etag = reply.getHeader('etag')
    if (reply.statusCode === 200 && typeof etag === 'string' && request.headers['if-none-match'] === etag) {
      reply.code(304)
      return ''
    }
    return payload
  })

  app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) => {
    const page = await load(PAGE)
    // the page is tiny; always revalidate so a new release shows at once
    return reply.type(page.type).header('cache-control', 'no-cache').header('etag', page.etag).send(page.body)
  })

  // the service's front door is the page; browsers ask every origin for /favicon.ico
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard', 302))

  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) => {
    const icon = await load(FAVICON)
    return reply.type(icon.type).header('cache-control', 'public, max-age=86400').header('etag', icon.etag).send(icon.body)
  })

  app.get(
    '/dashboard/assets/:name',
    { schema: { hide: true, params: z.object({ name: z.string() }) } },
    async (request, reply) => {
      // own keys only: `constructor` or `__proto__` would otherwise find Object.prototype's and answer 500
      const asset = Object.hasOwn(ASSETS, request.params.name) ? ASSETS[request.params.name] : undefined
      if (!asset) throw notFound(`No dashboard asset named ${request.params.name}`)
      const file = await load(asset)
      return reply.type(file.type).header('cache-control', 'no-cache').header('etag', file.etag).send(file.body)
    },
  )
}
