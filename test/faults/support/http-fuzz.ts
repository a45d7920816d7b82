import { Agent, request as httpRequest } from 'node:http'
import type { Random } from '../../../devnet/random.js'

/**
 * Hostile HTTP requests generated from the OpenAPI document, so every route
 * (and every route added later) is covered: random and boundary JSON built
 * from each schema, wrong types, missing and extra fields, huge arrays,
 * deep nesting, oversized bodies, bad UTF-8, malformed JSON, odd content
 * types, injection strings in paths and query strings, and credentials
 * that are right, wrong, revoked or for another project.
 */

type JsonSchema = {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: unknown[]
  pattern?: string
  minItems?: number
  maxItems?: number
  maxLength?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  $ref?: string
}

type Parameter = { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema?: JsonSchema }

export type Operation = { method: string; path: string; parameters: Parameter[]; body?: JsonSchema; tags: string[] }

/** Known-good values the generator mixes in, so requests get past the first check and reach deeper code. */
export type FuzzContext = {
  adminToken: string
  platformToken: string
  /** x-api-key values: a live key, another project's, a revoked one, a deleted project's. */
  apiKeys: string[]
  /** Ids safe to mutate (a sacrificial project and key). */
  ids: string[]
  appUrls: string[]
  wallets: string[]
  codes: string[]
  hashes: string[]
  bodyLimit: number
}

export type FuzzRequest = {
  method: string
  path: string
  headers: Record<string, string>
  body?: Buffer
  /** How the request was made, for failure messages and the report. */
  shape: string
  /** The body is over the server's limit: the answer must be 413. */
  oversized: boolean
  operation: Operation
}

/** Routes the OpenAPI document hides but the server still serves. */
const hiddenOperations: Operation[] = [
  { method: 'GET', path: '/dashboard', parameters: [], tags: ['hidden'] },
  { method: 'GET', path: '/dashboard/assets/{name}', parameters: [{ in: 'path', name: 'name', required: true, schema: { type: 'string' } }], tags: ['hidden'] },
  { method: 'GET', path: '/openapi.json', parameters: [], tags: ['hidden'] },
  { method: 'GET', path: '/docs', parameters: [], tags: ['hidden'] },
  { method: 'GET', path: '/metrics', parameters: [], tags: ['hidden'] },
  { method: 'GET', path: '/v1/{nothing}', parameters: [{ in: 'path', name: 'nothing', required: true, schema: { type: 'string' } }], tags: ['unknown'] },
]

/** Every operation of the OpenAPI document, plus the hidden ones. */
export function operationsOf(document: { paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> }; tags?: string[] }>> }): Operation[] {
  const operations: Operation[] = []
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: operation.parameters ?? [],
        body: operation.requestBody?.content?.['application/json']?.schema,
        tags: operation.tags ?? [],
      })
    }
  }
  return [...operations, ...hiddenOperations]
}

export const INJECTIONS = [
  "' OR '1'='1",
  "'; DROP TABLE notification_projects; --",
  '1; select pg_sleep(10)',
  '" OR ""="',
  '<script>alert(1)</script>',
  '${jndi:ldap://127.0.0.1/x}',
  '{{7*7}}',
  '../../../../etc/passwd',
  '..%2f..%2f..%2fetc%2fpasswd',
  '%00',
  '\u0000',
  'a\r\nX-Injected: 1',
  '$where',
  '__proto__',
  'constructor',
  '\ud800',
  '🙂'.repeat(50),
  'ﬁ𝕏\u202e',
  ' ',
  '',
]

/** encodeURIComponent, except that a lone surrogate (which it refuses) goes out as its invalid UTF-8 bytes. */
function encode(text: string): string {
  return text
    .split(/([\ud800-\udfff])/)
    .map((part) => (/^[\ud800-\udfff]$/.test(part) ? '%ED%A0%80' : encodeURIComponent(part)))
    .join('')
}

function int(random: Random, max: number) {
  return Math.floor(random.next() * max)
}

function randomHex(random: Random, chars: number) {
  let out = ''
  for (let i = 0; i < chars; i++) out += '0123456789abcdefABCDEF'[int(random, 22)]
  return out
}

/** Any JSON value at all, many of them at a boundary. */
function hostileValue(random: Random, context: FuzzContext): unknown {
  const pick = int(random, 22)
  switch (pick) {
    case 0:
      return null
    case 1:
      return random.next() < 0.5
    case 2:
      return random.pick([0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 2, 2 ** 31, 4294967296, Number.MIN_VALUE])
    case 3:
      return random.pick(INJECTIONS)
    case 4:
      return 'x'.repeat(random.pick([101, 201, 1001, 2049, 10_000, 100_000]))
    case 5:
      return []
    case 6:
      return {}
    case 7:
      return { $gt: '' }
    case 8:
      return Array.from({ length: random.pick([2, 1001, 5000]) }, () => random.pick(context.wallets))
    case 9:
      return deepNesting(random.pick([50, 1_000, 5_000]), random.next() < 0.5)
    case 10:
      return random.pick(context.ids)
    case 11:
      return random.pick(context.appUrls)
    case 12:
      return random.pick(context.wallets)
    case 13:
      return random.pick(context.hashes)
    case 14:
      return random.pick(context.codes)
    case 15:
      return `0x${randomHex(random, random.pick([39, 40, 41, 64, 65]))}`
    case 16:
      return random.pick(['true', 'false', '1', '0', 'yes', 'null', 'undefined', 'NaN', 'Infinity', '-1', '1e309', '9007199254740993'])
    case 17:
      return random.pick(['http://localhost', 'javascript:alert(1)', 'file:///etc/passwd', 'https://', 'https://a.example/'.padEnd(3000, 'x'), 'HTTPS://APP-A.EXAMPLE/', '//evil.example', '/\\evil.example'])
    case 18:
      return random.pick(['transaction', 'userOperation', 'TRANSACTION', '24h', '7d', '30d', 'all', '2024-02-30', '1970-01-01', '9999-12-31', '2024-01-01T00:00:00Z'])
    default:
      return random.pick(INJECTIONS) + randomHex(random, 4)
  }
}

/** JSON text spliced in as is when serialized: nesting deeper than JSON.stringify's own stack allows. */
class RawJson {
  constructor(readonly text: string) {}
}

function deepNesting(depth: number, arrays: boolean): RawJson {
  return new RawJson(arrays ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)
}

/** JSON.stringify that splices RawJson values in. */
function toJson(value: unknown): string {
  const raws: string[] = []
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (!(item instanceof RawJson)) return item
    raws.push(item.text)
    return `\u0000raw${raws.length - 1}\u0000`
  })
  return (text ?? 'null').replace(/"\\u0000raw(\d+)\\u0000"/g, (_, index: string) => raws[Number(index)]!)
}

/** A value that fits the schema (often a known-good one from the context), by field name when the name says what it is. */
function validValue(schema: JsonSchema | undefined, name: string, random: Random, context: FuzzContext, depth = 0): unknown {
  if (!schema || depth > 4) return null
  const variants = schema.anyOf ?? schema.oneOf
  if (variants) return validValue(random.pick(variants), name, random, context, depth + 1)
  if (schema.enum) return random.pick(schema.enum)
  const lower = name.toLowerCase()
  if (lower.includes('wallet_addresses')) return Array.from({ length: 1 + int(random, 5) }, () => random.pick(context.wallets))
  if (lower.includes('address')) return random.pick(context.wallets)
  if (lower.includes('app_url')) return random.pick(context.appUrls)
  if (lower === 'hash') return random.pick(context.hashes)
  if (lower === 'code') return random.pick(context.codes)
  if (lower === 'id' || lower === 'keyid') return random.pick(context.ids)
  if (lower === 'chainid') return random.pick([31337, 1, 8453])
  if (lower === 'title') return random.pick(['Hello', 'x'.repeat(30), 'é'.repeat(30)])
  if (lower === 'message') return random.pick(['A message', 'm'.repeat(200)])
  if (lower === 'target_path') return random.pick(['/', '/inbox?x=1', '/a'])
  if (lower === 'from' || lower === 'to') return random.pick(['2025-01-01', '2026-12-31'])
  const type = Array.isArray(schema.type) ? random.pick(schema.type) : schema.type
  switch (type) {
    case 'object': {
      const object: Record<string, unknown> = {}
      for (const [key, property] of Object.entries(schema.properties ?? {})) {
        if (schema.required?.includes(key) || random.next() < 0.5) object[key] = validValue(property, key, random, context, depth + 1)
      }
      return object
    }
    case 'array':
      return Array.from({ length: Math.max(schema.minItems ?? 0, 1 + int(random, 3)) }, () => validValue(schema.items, name, random, context, depth + 1))
    case 'integer':
    case 'number':
      return random.pick([1, 2, 10, 100, 500])
    case 'boolean':
      return random.next() < 0.5
    default:
      return random.pick(['name', 'a', 'x'.repeat(20)])
  }
}

/** Breaks a valid object: a field of the wrong type, a field missing, junk fields, or the whole body replaced. */
function mutateBody(value: unknown, random: Random, context: FuzzContext): unknown {
  if (random.next() < 0.15) return hostileValue(random, context)
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value
  const object = { ...(value as Record<string, unknown>) }
  const keys = Object.keys(object)
  const rounds = 1 + int(random, 3)
  for (let round = 0; round < rounds; round++) {
    const roll = random.next()
    if (roll < 0.5 && keys.length > 0) object[random.pick(keys)] = hostileValue(random, context)
    else if (roll < 0.7 && keys.length > 0) delete object[random.pick(keys)]
    else if (roll < 0.85) object[random.pick(['extra', '__proto__', 'constructor', 'prototype', '', 'x'.repeat(300)])] = hostileValue(random, context)
    else object[random.pick(keys.length > 0 ? keys : ['x'])] = validValue(undefined, 'x', random, context)
  }
  return object
}

/** Bodies that are not (well-formed) JSON at all. */
function rawBody(random: Random, context: FuzzContext): { body: Buffer; shape: string } {
  const roll = int(random, 10)
  switch (roll) {
    case 0:
      return { body: Buffer.from('{"name": "unterminated'), shape: 'truncated JSON' }
    case 1:
      return { body: Buffer.from('{"a":1,}'), shape: 'trailing comma' }
    case 2:
      return { body: Buffer.from('NaN'), shape: 'NaN literal' }
    case 3:
      return { body: Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]), shape: 'bad UTF-8 in a string' }
    case 4:
      return { body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"walletAddress":"0x0000000000000000000000000000000000000001"}')]), shape: 'BOM before JSON' }
    case 5:
      return { body: Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), shape: 'arrays nested 100,000 deep' }
    case 6:
      return { body: Buffer.from(`{"app_url":"${random.pick(context.appUrls)}","app_url":{"x":1},"name":"a","name":1}`), shape: 'duplicate keys' }
    case 7:
      return { body: Buffer.from('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"name":"proto"}'), shape: 'prototype keys' }
    case 8:
      return { body: Buffer.from('{"n": 1e99999, "m": -0, "k": 123456789012345678901234567890}'), shape: 'numbers out of range' }
    default:
      return { body: Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x00, 0x7d]), shape: 'UTF-16 bytes' }
  }
}

function pathValue(random: Random, context: FuzzContext, parameter: Parameter): string {
  const roll = random.next()
  const value =
    roll < 0.5
      ? String(validValue(parameter.schema, parameter.name, random, context))
      : roll < 0.9
        ? String(hostileValue(random, context))
        : random.pick(['%', '%zz', '%E0%A4%A', '..', '.', '%2e%2e%2f', '%00', 'a'.repeat(101), 'a'.repeat(5000)])
  // raw percent sequences stay as they are; anything else is encoded so the path is a valid request target
  return /^%|^\.\.?$/.test(value) ? value : encode(value)
}

function queryString(random: Random, context: FuzzContext, parameters: Parameter[]): string {
  const pairs: string[] = []
  for (const parameter of parameters) {
    const roll = random.next()
    if (!parameter.required && roll < 0.3) continue
    if (parameter.required && roll < 0.05) continue
    const values = roll < 0.55 ? [validValue(parameter.schema, parameter.name, random, context)] : roll < 0.9 ? [hostileValue(random, context)] : [1, 2].map(() => validValue(parameter.schema, parameter.name, random, context))
    for (const value of values) {
      const text = typeof value === 'string' ? value : toJson(value)
      pairs.push(`${encode(parameter.name)}=${random.next() < 0.95 ? encode(text) : text.replace(/[^\x21-\x7e]/g, '').replaceAll('#', '%23')}`)
    }
  }
  if (random.next() < 0.2) pairs.push(`${encode(random.pick(INJECTIONS))}=${encode(random.pick(INJECTIONS))}`)
  if (random.next() < 0.05) pairs.push(random.pick(['%', '%ff%fe', 'a[b]=1', 'a[]=1&a[]=2', '=', '&&&', 'x=%E0%A4%A']))
  return pairs.length > 0 ? `?${pairs.join('&')}` : ''
}

function authorization(random: Random, context: FuzzContext, tags: string[]): Record<string, string> {
  const right = tags.includes('admin') ? context.adminToken : tags.includes('platform') ? context.platformToken : random.pick([context.adminToken, context.platformToken])
  const roll = random.next()
  if (roll < 0.3) return {}
  if (roll < 0.65) return { authorization: `Bearer ${right}` }
  return {
    authorization: random.pick([
      `Bearer ${right}x`,
      `Bearer ${right.slice(0, -1)}`,
      `Basic ${Buffer.from(`admin:${right}`).toString('base64')}`,
      'Bearer',
      'Bearer ',
      `Bearer ${context.adminToken === right ? context.platformToken : context.adminToken}`,
      `bearer ${right.toUpperCase()}`,
      `Bearer ${'x'.repeat(10_000)}`,
      `Bearer ${right} ${right}`,
      `Token ${right}`,
    ]),
  }
}

function apiKeyHeader(random: Random, context: FuzzContext): Record<string, string> {
  const roll = random.next()
  if (roll < 0.2) return {}
  if (roll < 0.75) return { 'x-api-key': random.pick(context.apiKeys) }
  return { 'x-api-key': random.pick(['', 'ank_', 'ank_x', `${context.apiKeys[0]}x`, context.apiKeys[0]!.toUpperCase(), 'x'.repeat(201), 'x'.repeat(8_000), "' OR 1=1 --"]) }
}

/** One hostile request. */
export function nextRequest(random: Random, context: FuzzContext, operations: Operation[]): FuzzRequest {
  const operation = random.pick(operations)
  let method = operation.method
  // sometimes the wrong method on a real path
  if (random.next() < 0.04) method = random.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'])
  let path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    pathValue(random, context, operation.parameters.find((parameter) => parameter.name === name) ?? { in: 'path', name }),
  )
  path += queryString(random, context, operation.parameters.filter((parameter) => parameter.in === 'query'))
  const headers: Record<string, string> = {
    ...authorization(random, context, operation.tags),
    ...apiKeyHeader(random, context),
  }
  if (random.next() < 0.2) headers['x-forwarded-for'] = random.pick(['1.2.3.4', '127.0.0.1, 10.0.0.1', 'not-an-ip', '::1', '999.999.999.999'])

  let body: Buffer | undefined
  let shape = 'json'
  let oversized = false
  const bodyRoll = random.next()
  if (operation.body || bodyRoll < 0.1) {
    if (bodyRoll < 0.03) {
      // over the limit: the server must refuse it with 413 before reading it all
      body = Buffer.alloc(context.bodyLimit + 1 + int(random, 1_000), 0x20)
      body.write(`{"name":"${'x'.repeat(32)}`, 0)
      shape = 'oversized'
      oversized = true
    } else if (bodyRoll < 0.2) {
      ;({ body, shape } = rawBody(random, context))
    } else {
      const valid = validValue(operation.body, 'body', random, context)
      const value = random.next() < 0.35 ? valid : mutateBody(valid, random, context)
      shape = value === valid ? 'valid-ish json' : 'mutated json'
      body = Buffer.from(toJson(value))
    }
    const contentTypeRoll = random.next()
    headers['content-type'] =
      contentTypeRoll < 0.85
        ? 'application/json'
        : random.pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/xml', '*/*', 'application/json, text/plain'])
    if (random.next() < 0.03) delete headers['content-type']
  }
  return { method, path, headers, body, shape, oversized, operation }
}

export type FuzzResponse = { status: number; body: string; ms: number } | { error: string; ms: number }

// a fresh connection per request: a connection the server closed after refusing a request must not fail the next one
const agent = new Agent({ keepAlive: false })

/** True when an error answer has the contract's one error body: `{ success: false, error: { code, message, field? } }`. */
export function hasErrorShape(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { success?: unknown; error?: { code?: unknown; message?: unknown } }
    return parsed.success === false && typeof parsed.error?.code === 'string' && typeof parsed.error.message === 'string'
  } catch {
    return false
  }
}

/** Sends a request exactly as built (no client-side normalization), with a deadline: a hang is an answer too. */
export function send(baseUrl: string, request: Pick<FuzzRequest, 'method' | 'path' | 'headers' | 'body'>, timeoutMs: number): Promise<FuzzResponse> {
  const started = Date.now()
  const url = new URL(baseUrl)
  return new Promise((resolve) => {
    const outgoing = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        // framed explicitly: Node sends a GET's or DELETE's body unframed otherwise, and the server would read it as a second request
        headers: request.body ? { ...request.headers, 'content-length': String(request.body.length) } : request.headers,
        agent,
        timeout: timeoutMs,
      },
      (response) => {
        // an event stream never ends and its heartbeats would keep an idle timeout from firing: its headers are the answer
        if (response.statusCode === 200 && String(response.headers['content-type']).startsWith('text/event-stream')) {
          resolve({ status: 200, body: '', ms: Date.now() - started })
          response.destroy()
          return
        }
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => {
          if (chunks.length < 64) chunks.push(chunk)
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started }))
        response.on('error', (error) => resolve({ error: error.message, ms: Date.now() - started }))
      },
    )
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    // `timeout` above is idle time; a server trickling bytes must not hold the request past the deadline either
    const deadline = setTimeout(() => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    outgoing.on('close', () => clearTimeout(deadline))
    outgoing.on('error', (error: Error & { rawPacket?: Buffer }) => {
      // the server's answer to a request its HTTP parser refused (431 for a HEAD with a 100 kB path) carries a
      // body the client did not expect after a HEAD: still an answer, read from the raw bytes
      const raw = error.rawPacket?.toString('utf8') ?? ''
      const answered = /^HTTP\/1\.1 (\d{3}) /.exec(raw)
      if (answered) resolve({ status: Number(answered[1]), body: raw.slice(raw.indexOf('\r\n\r\n') + 4), ms: Date.now() - started })
      else resolve({ error: error.message, ms: Date.now() - started })
    })
    if (request.body) outgoing.end(request.body)
    else outgoing.end()
  })
}
