import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Chain } from './files.js'
import { createNodeProfile, type NodeProfile, type ProfileSpec, type ProfileStats } from './node-profiles.js'
import { createReplayMethods, RpcError, type Result } from './replay-methods.js'
import { attachNewHeadsPush } from './replay-ws.js'

/**
 * A JSON-RPC node that replays a generated chain. On the `fast` profile it
 * costs next to nothing, so that a benchmark measures its client: blocks are
 * answered with their pre-serialized bytes (the response is the request id
 * spliced around them, written with one writev), batches included. Other
 * profiles (node-profiles.ts) make it answer like a slower kind of node: a
 * serial one whose cost grows faster than the answer, or a remote provider
 * with latency and a cap on requests in flight.
 *
 * It serves what an indexer uses (replay-methods.ts). Anything else is a
 * JSON-RPC error -32601 and is counted, so a bench can tell the indexer
 * called something the replay does not know.
 *
 * Blocks are released up to a head that is either fixed or grows at a
 * configured rate (live mode); anything above the head does not exist yet
 * (null), like on a real node.
 *
 * Control endpoints (plain HTTP, not JSON-RPC; never shaped by the profile):
 *   GET  /__replay/stats         counters, release state, first block request time, CPU since the last reset
 *   POST /__replay/release       {"head"?: n, "rate"?: blocks per second}
 *   POST /__replay/reset-stats
 *   POST /__replay/profile       a ProfileSpec: {"name": "fast"} | {"name": "serial", "options": …} | {"name": "remote", "options": …}
 *
 * A WebSocket on the same port (`ws://…`, replay-ws.ts) answers JSON-RPC and
 * pushes `newHeads` as blocks are released, for an indexer run with `WS_URL`.
 */

export type ReleaseState = {
  /** Head at `baseAt`. */
  baseHead: number
  /** Epoch ms when the current release schedule started. */
  baseAt: number
  /** Blocks per second after `baseAt`; 0 keeps the head at `baseHead`. */
  rate: number
}

export type ReplayStats = {
  chainId: number
  lastBlock: number
  head: number
  release: ReleaseState
  profile: ProfileSpec
  requests: number
  batches: number
  calls: Record<string, number>
  unsupported: Record<string, number>
  fullBlocksServed: number
  headerBlocksServed: number
  /**
   * Requests by shape: per kind of call (a batch's first call's method; full
   * blocks and headers apart; `mixed` when a batch holds several methods), how
   * many requests of each length (0 keys a call sent alone, not as a batch).
   * What a client asks the node is more than its calls: every request costs
   * the node its own parsing and writing.
   */
  shapes: Record<string, Record<number, number>>
  /** Requests by how many others the node held when they arrived (answered or not yet). */
  arrivedWithHeld: Record<number, number>
  bytesOut: number
  /** Epoch ms of the first request naming a block above 0 since the last reset: when an indexer started working. */
  firstBlockRequestAt: number | null
  lastRequestAt: number | null
  /** CPU the replay process itself spent since the last reset (user + system), ms. */
  processCpuMs: number
} & ProfileStats

export type ReplayServer = {
  url: string
  stats(): ReplayStats
  release(options: { head?: number; rate?: number }): ReleaseState
  setProfile(spec: ProfileSpec): ProfileSpec
  close(): Promise<void>
}

type RpcRequest = { id?: unknown; method?: unknown; params?: unknown }

const cpuMs = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

export function createReplayServer(chain: Chain, options: { head?: number; rate?: number; profile?: ProfileSpec } = {}) {
  let release: ReleaseState = { baseHead: options.head ?? chain.lastBlock, baseAt: Date.now(), rate: options.rate ?? 0 }
  let profile: NodeProfile = createNodeProfile(options.profile ?? { name: 'fast' })
  let stats = freshStats()

  function freshStats() {
    return {
      requests: 0,
      batches: 0,
      calls: {} as Record<string, number>,
      unsupported: {} as Record<string, number>,
      fullBlocksServed: 0,
      headerBlocksServed: 0,
      shapes: {} as Record<string, Record<number, number>>,
      arrivedWithHeld: {} as Record<number, number>,
      bytesOut: 0,
      firstBlockRequestAt: null as number | null,
      lastRequestAt: null as number | null,
      cpuMsAtReset: cpuMs(),
    }
  }

  function head(): number {
    if (release.rate <= 0) return Math.min(chain.lastBlock, release.baseHead)
    const grown = Math.floor(((Date.now() - release.baseAt) * release.rate) / 1000)
    return Math.min(chain.lastBlock, release.baseHead + grown)
  }

  const methods = createReplayMethods(chain, {
    head,
    touchBlock(number) {
      if (number > 0 && stats.firstBlockRequestAt === null) stats.firstBlockRequestAt = Date.now()
    },
    countBlock(full) {
      if (full) stats.fullBlocksServed++
      else stats.headerBlocksServed++
    },
  })

  /** RPC requests the server holds now: arrived, not yet answered. */
  let held = 0

  /** The kind of call a request carries, as the shapes count it. */
  function kindOf(request: RpcRequest): string {
    const method = typeof request?.method === 'string' ? request.method : '?'
    if (method !== 'eth_getBlockByNumber' && method !== 'eth_getBlockByHash') return method
    return `${method}(${Array.isArray(request.params) && request.params[1] === true ? 'full' : 'header'})`
  }

  function countShape(payload: unknown): void {
    const calls = Array.isArray(payload) ? (payload as RpcRequest[]) : [payload as RpcRequest]
    const kinds = new Set(calls.map((call) => kindOf(call ?? {})))
    const kind = kinds.size === 1 ? [...kinds][0]! : 'mixed'
    const length = Array.isArray(payload) ? payload.length : 0
    const byLength = (stats.shapes[kind] ??= {})
    byLength[length] = (byLength[length] ?? 0) + 1
  }

  const unsupported = (method: string) => {
    stats.unsupported[method] = (stats.unsupported[method] ?? 0) + 1
  }

  /** The response to one JSON-RPC call, as chunks to write in order; returns the result's size in bytes. */
  function respond(request: RpcRequest, chunks: Array<Buffer | string>): number {
    const id = request.id === undefined ? 'null' : JSON.stringify(request.id)
    try {
      if (typeof request.method !== 'string') throw new RpcError(-32600, 'invalid request')
      stats.calls[request.method] = (stats.calls[request.method] ?? 0) + 1
      const result: Result = methods.call(request.method, Array.isArray(request.params) ? request.params : [], unsupported)
      chunks.push(`{"jsonrpc":"2.0","id":${id},"result":`, result, '}')
      return result.length
    } catch (error) {
      const code = error instanceof RpcError ? error.code : -32603
      const text = `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify({ code, message: (error as Error).message })}}`
      chunks.push(text)
      return text.length
    }
  }

  function send(response: ServerResponse, status: number, chunks: Array<Buffer | string>, headers: Record<string, string> = {}): void {
    // the client may have given up on a held answer (a timeout): nothing to write to
    if (response.destroyed) return
    const buffers = chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk))
    const length = buffers.reduce((sum, buffer) => sum + buffer.length, 0)
    stats.bytesOut += length
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': length, ...headers })
    // one writev for the whole response instead of a syscall per chunk
    response.cork()
    for (const buffer of buffers) response.write(buffer)
    response.uncork()
    response.end()
  }

  function handleRpc(body: Buffer, response: ServerResponse): void {
    stats.requests++
    stats.lastRequestAt = Date.now()
    stats.arrivedWithHeld[held] = (stats.arrivedWithHeld[held] ?? 0) + 1
    held++
    response.once('close', () => held--)
    const refusal = profile.admit()
    if (refusal) {
      const message = `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"too many requests in flight"}}`
      profile.refuse(() => send(response, refusal.status, [message], { 'retry-after': String(refusal.retryAfterSeconds) }))
      return
    }
    let payload: unknown
    try {
      payload = JSON.parse(body.toString('utf8'))
    } catch {
      const chunks = ['{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}']
      profile.answer({ callBytes: [], answerBytes: chunks[0]!.length }, () => send(response, 200, chunks))
      return
    }
    countShape(payload)
    const chunks: Array<Buffer | string> = []
    const callBytes: number[] = []
    if (Array.isArray(payload)) {
      stats.batches++
      chunks.push('[')
      payload.forEach((request, i) => {
        if (i > 0) chunks.push(',')
        callBytes.push(respond((request ?? {}) as RpcRequest, chunks))
      })
      chunks.push(']')
    } else {
      callBytes.push(respond((payload ?? {}) as RpcRequest, chunks))
    }
    const answerBytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0)
    profile.answer({ callBytes, answerBytes }, () => send(response, 200, chunks))
  }

  function snapshot(): ReplayStats {
    const { cpuMsAtReset, ...counters } = stats
    return {
      chainId: chain.chainId,
      lastBlock: chain.lastBlock,
      head: head(),
      release: { ...release },
      profile: profile.spec,
      ...counters,
      processCpuMs: cpuMs() - cpuMsAtReset,
      ...profile.stats(),
    }
  }

  function setRelease(next: { head?: number; rate?: number }): ReleaseState {
    release = { baseHead: Math.min(chain.lastBlock, next.head ?? head()), baseAt: Date.now(), rate: next.rate ?? 0 }
    pushedHeads.rescheduled()
    return { ...release }
  }

  function setProfile(spec: ProfileSpec): ProfileSpec {
    profile = createNodeProfile(spec)
    return profile.spec
  }

  function handleControl(request: IncomingMessage, body: Buffer, response: ServerResponse): void {
    const path = (request.url ?? '').split('?')[0]
    const json = () => (body.length > 0 ? JSON.parse(body.toString('utf8')) : {})
    let result: unknown
    if (path === '/__replay/stats') result = snapshot()
    else if (path === '/__replay/release' && request.method === 'POST') result = setRelease(json() as { head?: number; rate?: number })
    else if (path === '/__replay/profile' && request.method === 'POST') result = setProfile(json() as ProfileSpec)
    else if (path === '/__replay/reset-stats' && request.method === 'POST') {
      stats = freshStats()
      profile.resetStats()
      result = snapshot()
    } else {
      send(response, 404, ['{"error":"unknown control path"}'])
      return
    }
    send(response, 200, [JSON.stringify(result)])
  }

  const server: Server = createHttpServer((request, response) => {
    const parts: Buffer[] = []
    request.on('data', (part: Buffer) => parts.push(part))
    request.on('end', () => {
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
      try {
        if (request.url?.startsWith('/__replay/')) handleControl(request, body, response)
        else if (request.method === 'POST') handleRpc(body, response)
        else send(response, 405, ['{"error":"JSON-RPC needs POST"}'])
      } catch (error) {
        if (!response.headersSent) send(response, 500, [JSON.stringify({ error: (error as Error).message })])
      }
    })
  })
  const pushedHeads = attachNewHeadsPush(server, {
    head,
    release: () => release,
    header: (number) => methods.call('eth_getBlockByNumber', [`0x${number.toString(16)}`, false], unsupported),
    call: (method, params) => methods.call(method, params, unsupported),
  })
  // clients keep connections open across a whole backfill
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000

  return {
    async listen(port = 0, host = '127.0.0.1'): Promise<ReplayServer> {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => resolve())
      })
      const address = server.address() as AddressInfo
      return {
        url: `http://${host}:${address.port}`,
        stats: snapshot,
        release: setRelease,
        setProfile,
        close: () =>
          new Promise<void>((resolve) => {
            pushedHeads.close()
            server.closeAllConnections()
            server.close(() => resolve())
          }),
      }
    },
  }
}
