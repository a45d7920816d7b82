import { createServer, type RequestListener, type Server } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { validateThroughApi } from './validate-through-api.js'

/**
 * `attribution validate --api` over node:http (not fetch, which costs the command most of its time
 * to load): what fetch did for it, it still does: redirects followed, a timeout, the connection's
 * error code, an answer that is not the API's JSON refused in one line.
 */

const HASH = `0x${'ab'.repeat(32)}`
const servers: Array<{ close(): unknown }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

async function listen(handler: RequestListener): Promise<string> {
  const server: Server = createServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function capture() {
  let text = ''
  return { out: { write: (chunk: string) => (text += chunk) }, json: () => JSON.parse(text) as Record<string, unknown> }
}

describe('validateThroughApi', () => {
  it('asks GET /v1/attribution/validate with the arguments and prints the JSON answer; exit status by the API status', async () => {
    const api = await listen((request, response) => {
      const url = new URL(request.url!, 'http://x')
      const notFound = url.searchParams.get('hash') === HASH.replace('ab', 'cd')
      response.writeHead(notFound ? 404 : 200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(notFound ? { success: false } : { attributed: true, path: url.pathname, query: Object.fromEntries(url.searchParams), accept: request.headers.accept }))
    })
    const found = capture()
    expect(await validateThroughApi([HASH, '--type', 'userOperation', '--chain', '8453', '--api', api], found.out)).toBe(0)
    expect(found.json()).toEqual({
      attributed: true,
      path: '/v1/attribution/validate',
      query: { hash: HASH, type: 'userOperation', chainId: '8453' },
      accept: 'application/json',
    })
    expect(await validateThroughApi([HASH.replace('ab', 'cd'), '--api', api], capture().out)).toBe(1)
  })

  it('follows a redirect (a proxy in front of the API)', async () => {
    const api = await listen((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ attributed: false, path: request.url }))
    })
    const proxy = await listen((request, response) => {
      response.writeHead(308, { location: `${api}/behind${request.url}` })
      response.end()
    })
    const answer = capture()
    expect(await validateThroughApi([HASH, '--api', proxy], answer.out)).toBe(1)
    expect(answer.json().path).toMatch(/^\/behind\/v1\/attribution\/validate\?/)
  })

  it('refuses an answer that is not the API\'s JSON in one line', async () => {
    const api = await listen((_request, response) => {
      response.writeHead(404, { 'content-type': 'text/html' })
      response.end('<h1>Not Found</h1>')
    })
    const host = new URL(api).host
    await expect(validateThroughApi([HASH, '--api', api], capture().out)).rejects.toThrow(`--api: ${host} answered 404 without the API's JSON: is it the attribution API?`)
  })

  it('names ETIMEDOUT when the daemon accepts and never answers, and the code of a refused connection', async () => {
    // reads the request (so it sees the client hang up, and close() can finish), never answers
    const silent = createTcpServer((socket) => socket.resume())
    servers.push(silent)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const host = `127.0.0.1:${(silent.address() as AddressInfo).port}`
    await expect(validateThroughApi([HASH, '--api', `http://${host}`], capture().out, 200)).rejects.toThrow(`--api: no answer from ${host} (ETIMEDOUT)`)
    silent.close()
    await new Promise((resolve) => silent.once('close', resolve))
    await expect(validateThroughApi([HASH, '--api', `http://${host}`], capture().out)).rejects.toThrow(`--api: no answer from ${host} (ECONNREFUSED)`)
  })
})
