import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Random } from '../../devnet/random.js'

/**
 * The one JSON-RPC proxy of the tests, in front of a node (anvil) that it makes misbehave on
 * purpose. A request passes these layers in turn; each is off until a test turns it on:
 *
 * 1. limits a real node applies, each in the shape that node answers with (`RpcLimits`);
 * 2. a fault on the way (`RpcFault`): picked by the test (`fault`), or drawn by
 * 3. chaos (`ChaosSettings`, needs `random`): a bad provider's pool, every choice drawn from the
 *    test's seeded Random: faults, a share of requests answered by a node that lags, batch
 *    answers shuffled or two of them trading results;
 * 4. the node's answer: the body forwarded as the client sent it, or call by call when the proxy
 *    answers some calls itself (a refused log range, a lagging node's head);
 * 5. the answer rewritten: the test's `rewrite`, geth's response-size limit, chaos; a `truncated`
 *    fault cuts the result last.
 *
 * Counts of what it did (faults, limits, calls per method, batch lengths) let a test check that
 * each misbehaviour really happened.
 */

/** What one HTTP request is answered with instead of (or besides) the node's answer; `ok`: the node's answer. */
export type RpcFault = 'ok' | '429' | '500' | '502' | '503' | 'timeout' | 'truncated' | 'reset' | 'rpc-error' | 'endless'
/** Every fault a bad provider injects. */
export const httpFaults: readonly RpcFault[] = ['429', '500', '502', '503', 'timeout', 'truncated', 'reset', 'rpc-error']

/**
 * Limits real nodes apply, each in the shape the node answers with:
 * - batchLimit: Erigon (one error object, id null, -32000 "batch limit N exceeded"), Besu (-32602
 *   "Number of requests in batch exceeds limit of N", per call), HTTP 413, or HTTP 400 naming the batch;
 * - maxResponseBytes: geth's batch response size limit (calls past it get -32003 "response too large");
 * - noBatches: a provider that takes single calls only (id null, -32600);
 * - msPerCall: a slow node, the answer delayed by this much per call of the request;
 * - rateLimit: at most `requests` per `windowMs`, then 429 with Retry-After `retryAfterS` (none when unset);
 * - maxLogRange: hosted providers' eth_getLogs range limit (calls over more blocks get -32005);
 * - batchBreaks: a node or proxy that fails batches of more than `over` calls without naming a limit:
 *   it drops the connection (`reset`), answers a proxy's HTML error page (`html502`), cuts the
 *   answer short (`truncated`), or streams a body that never ends (`endless`: a megabyte a write,
 *   as fast as the client reads). Single calls and shorter batches are served.
 */
export type RpcLimits = {
  batchLimit?: { max: number; shape: 'erigon' | 'besu' | 'http413' | 'http400' }
  maxResponseBytes?: number
  noBatches?: boolean
  msPerCall?: number
  rateLimit?: { requests: number; windowMs: number; retryAfterS?: number }
  maxLogRange?: number
  batchBreaks?: { over: number; shape: BatchBreak }
}

export type BatchBreak = 'reset' | 'html502' | 'truncated' | 'endless'

export type LimitCounts = Record<'batch_refused' | 'too_large' | 'no_batches' | 'rate_limited' | 'delayed' | 'log_range_refused' | 'batch_broken', number>

export type ChaosSettings = {
  /** Share of HTTP requests answered with one of `faults`. */
  faultRate: number
  faults: readonly RpcFault[]
  /** Share of the other requests served by the lagging node. */
  laggingShare: number
  /** How many blocks the lagging node is behind (drawn per request from 1..maxLag). */
  maxLag: number
  /** Answer batches in a shuffled order (ids intact, as JSON-RPC allows). */
  shuffleBatches: boolean
  /**
   * Share of the answers holding two results of one method in which they trade results while keeping
   * their ids (the first such answer included): a broken node or proxy answering block N with block M,
   * or one transaction's receipt with another's.
   */
  swapResults: number
}

/** Requests per fault; of the `ok` ones, those a lagging node answered, and batches shuffled or with results swapped. */
export type ProxyCounts = Record<RpcFault | 'lagging' | 'shuffled' | 'swapped', number>

export type RpcProxyOptions = {
  target: string
  limits?: RpcLimits
  /** Picks the fault for each HTTP request; the parsed JSON-RPC body is given for method-aware faults. */
  fault?: (body: unknown) => RpcFault
  /** How long a `timeout` fault holds the request before dropping it. */
  hangMs?: number
  /** Rewrites a successful JSON-RPC response body (e.g. to act as a node that lags). */
  rewrite?: (request: unknown, response: unknown) => unknown
  /** The seeded randomness of the chaos layer; without it the proxy draws nothing and `setChaos` is refused. */
  random?: Random
}

export type RpcProxy = {
  url: string
  counts: ProxyCounts
  /** Requests answered with each limit so far. */
  limitCounts: LimitCounts
  /** Calls per request seen so far, in order (to check how the client's batches settled). */
  batchLengths: number[]
  /** Calls seen so far per JSON-RPC method. */
  methodCalls: Record<string, number>
  setLimits(limits: RpcLimits): void
  setFault(fault: RpcProxyOptions['fault']): void
  setRewrite(rewrite: RpcProxyOptions['rewrite']): void
  setChaos(settings: Partial<ChaosSettings>): void
  close(): Promise<void>
}

type RpcId = number | string | null
type RpcCall = { jsonrpc: '2.0'; id: RpcId; method: string; params?: unknown[] }
type RpcAnswer = { jsonrpc: '2.0'; id: RpcId; result?: unknown; error?: { code: number; message: string } }

/** One HTTP request on its way through the layers. */
type Exchange = {
  request: IncomingMessage
  response: ServerResponse
  /** The body as the client sent it. */
  raw: string
  /** The body as JSON; undefined when it is not JSON. */
  parsed: unknown
  /** Its calls: one for a single call, none when the body is not JSON-RPC. */
  calls: RpcCall[]
  batch: boolean
}

/** An HTTP answer before it is sent: the node's, or one a layer gives instead. */
type Reply = { status: number; headers: Record<string, string>; body: string }

const json = { 'content-type': 'application/json' }
/** What a load balancer in front of a node answers when the node behind it gave up on a request. */
const BAD_GATEWAY_PAGE = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n'
const plainText = { 'content-type': 'text/plain' }
const rpcError = (id: RpcId, code: number, message: string): RpcAnswer => ({ jsonrpc: '2.0', id, error: { code, message } })
const jsonReply = (body: unknown): Reply => ({ status: 200, headers: json, body: JSON.stringify(body) })
/** The answers of a batch as a batch, the answer of a single call alone. */
const asAsked = (batch: boolean, answers: RpcAnswer[]) => (batch ? answers : answers[0])
const rateLimited = (retryAfterS: number | undefined): Reply => ({
  status: 429,
  headers: retryAfterS === undefined ? json : { ...json, 'retry-after': String(retryAfterS) },
  body: JSON.stringify(rpcError(null, 429, 'Too Many Requests')),
})

export async function startRpcProxy(options: RpcProxyOptions): Promise<RpcProxy> {
  const node = nodeAt(options.target)
  const counts: ProxyCounts = {
    ok: 0,
    '429': 0,
    '500': 0,
    '502': 0,
    '503': 0,
    timeout: 0,
    truncated: 0,
    reset: 0,
    'rpc-error': 0,
    endless: 0,
    lagging: 0,
    shuffled: 0,
    swapped: 0,
  }
  const limits = limitedNode(options.limits ?? {})
  const chaos = options.random ? chaoticPool(options.random, node, counts) : undefined
  const batchLengths: number[] = []
  const methodCalls: Record<string, number> = {}
  let fault = options.fault ?? (() => 'ok' as RpcFault)
  let rewrite = options.rewrite
  const hangMs = options.hangMs ?? 3_000

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const exchange = await readExchange(request, response)
    observe(exchange)
    const refusal = limits.refuse(exchange)
    if (refusal) return send(response, refusal)
    const broken = limits.breaks(exchange)
    if (broken === 'reset') return void request.socket.destroy()
    if (broken === 'html502') return send(response, { status: 502, headers: { 'content-type': 'text/html' }, body: BAD_GATEWAY_PAGE })
    if (broken === 'endless') return streamEndlessly(response)
    const delayMs = limits.delayMs(exchange)
    if (delayMs > 0) {
      await sleep(delayMs)
      // the client gave up waiting: nothing to answer
      if (response.destroyed) return
    }
    const chosen = pickFault(exchange)
    counts[chosen]++
    if (answerWithFault(chosen, exchange)) return
    // chaos only reshapes what it did not fault: a truncated body is the node's own answer, cut
    const shaken = chosen === 'ok' ? chaos : undefined
    let reply = await answerFromNode(exchange, await shaken?.lagHead())
    reply = rewritten(exchange, reply)
    reply = limits.capResponse(exchange, reply)
    if (shaken) reply = shaken.reshape(exchange, reply)
    if (chosen === 'truncated' || broken === 'truncated') reply = truncated(reply)
    send(response, reply)
  }

  function observe({ parsed, calls, batch }: Exchange) {
    if (parsed && typeof parsed === 'object') batchLengths.push(batch ? calls.length : 1)
    for (const { method } of calls) methodCalls[method] = (methodCalls[method] ?? 0) + 1
  }

  /** The test's fault first; where it has none, chaos draws one. */
  function pickFault(exchange: Exchange): RpcFault {
    const picked = fault(exchange.parsed)
    return picked === 'ok' && chaos ? chaos.fault() : picked
  }

  /** Answers the request with `fault` if that needs nothing from the node; false if it goes on to the node. */
  function answerWithFault(chosen: RpcFault, { request, response, calls, batch }: Exchange): boolean {
    switch (chosen) {
      case 'ok':
      case 'truncated':
        return false
      case '429':
        // a rate limit that says when to come back: at once, or 0-1 s drawn by chaos, so retries stay quick
        send(response, rateLimited(chaos?.retryAfterS() ?? 0))
        return true
      case '500':
      case '502':
      case '503':
        send(response, { status: Number(chosen), headers: plainText, body: 'upstream unavailable' })
        return true
      case 'timeout':
        // held past the client's timeout, then dropped (close() drops it sooner)
        setTimeout(() => response.destroy(), hangMs).unref()
        return true
      case 'reset':
        request.socket.destroy()
        return true
      case 'endless':
        streamEndlessly(response)
        return true
      case 'rpc-error':
        // HTTP 200 with a JSON-RPC error for every call, as a provider over its quota answers
        send(response, jsonReply(asAsked(batch, calls.map((call) => rpcError(call.id, -32005, 'limit exceeded')))))
        return true
    }
  }

  /**
   * The node's answer: the body forwarded as the client sent it, unless some calls are answered
   * here (refused log ranges) or the request reaches a node behind at `lagHead`; then the others
   * are forwarded and the answers merged in the order asked.
   */
  async function answerFromNode(exchange: Exchange, lagHead: number | undefined): Promise<Reply> {
    const local = limits.refuseLogRanges(exchange.calls)
    if (lagHead === undefined && local.size === 0) return node.post(exchange.raw)
    const answers = lagHead === undefined ? await node.answerCalls(exchange.calls, local) : await answerAsLaggingNode(node, exchange.calls, lagHead, local)
    return jsonReply(asAsked(exchange.batch, answers))
  }

  function rewritten(exchange: Exchange, reply: Reply): Reply {
    const succeeded = reply.status >= 200 && reply.status < 300
    if (!rewrite || !succeeded || exchange.parsed === undefined) return reply
    return { ...reply, body: JSON.stringify(rewrite(exchange.parsed, JSON.parse(reply.body))) }
  }

  /** A body cut mid-way: valid headers, unparseable JSON. Half of it, or at a point chaos draws. */
  function truncated(reply: Reply): Reply {
    const length = reply.body.length
    const kept = chaos ? chaos.cutAt(length) : Math.floor(length / 2)
    return { status: 200, headers: json, body: reply.body.slice(0, kept) }
  }

  const sockets = new Set<Socket>()
  const server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy())
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    limitCounts: limits.counts,
    batchLengths,
    methodCalls,
    setLimits: limits.set,
    setFault: (next) => {
      fault = next ?? (() => 'ok')
    },
    setRewrite: (next) => {
      rewrite = next
    },
    setChaos: (next) => {
      if (!chaos) throw new Error('chaos draws from a seeded Random: start the proxy with `random`')
      chaos.set(next)
    },
    async close() {
      // hung requests included: a test must not wait for their timers
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Every `every`-th request fails, cycling through the faults in order: each kind is injected, deterministically. */
export function rotatingFaults(every: number, faults: RpcFault[]): (body: unknown) => RpcFault {
  let requests = 0
  return () => {
    requests++
    return requests % every === 0 ? faults[(requests / every) % faults.length]! : 'ok'
  }
}

async function readExchange(request: IncomingMessage, response: ServerResponse): Promise<Exchange> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const raw = Buffer.concat(chunks).toString('utf8')
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    parsed = undefined
  }
  const batch = Array.isArray(parsed)
  const calls = (batch ? parsed : parsed && typeof parsed === 'object' ? [parsed] : []) as RpcCall[]
  return { request, response, raw, parsed, calls, batch }
}

/** An answer that never ends: a JSON-RPC result string a megabyte a write, for as long as the client reads. */
export function streamEndlessly(response: ServerResponse): void {
  response.writeHead(200, json)
  response.write('{"jsonrpc":"2.0","id":0,"result":"0x')
  response.on('error', () => {})
  const more = () => {
    while (!response.destroyed && response.write(ENDLESS_PIECE));
    if (!response.destroyed) response.once('drain', more)
  }
  more()
}
const ENDLESS_PIECE = Buffer.alloc(2 ** 20, 'a')

function send(response: ServerResponse, reply: Reply): void {
  response.writeHead(reply.status, reply.headers).end(reply.body)
}

type Node = ReturnType<typeof nodeAt>

/** The one place that talks to the node behind the proxy. */
function nodeAt(target: string) {
  async function post(body: string): Promise<Reply> {
    const response = await fetch(target, { method: 'POST', headers: json, body })
    return { status: response.status, headers: json, body: await response.text() }
  }

  /** Answers `calls` in order: those in `local` as given, the others from the node in one batch. */
  async function answerCalls(calls: RpcCall[], local: Map<RpcId, RpcAnswer>): Promise<RpcAnswer[]> {
    const remote = calls.filter((call) => !local.has(call.id))
    const answers = remote.length === 0 ? [] : (JSON.parse((await post(JSON.stringify(remote))).body) as RpcAnswer[])
    const byId = new Map(answers.map((answer) => [answer.id, answer]))
    return calls.map((call) => local.get(call.id) ?? byId.get(call.id)!)
  }

  async function head(): Promise<number> {
    const answer = JSON.parse((await post(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber', params: [] }))).body) as RpcAnswer
    return Number.parseInt(String(answer.result), 16)
  }

  return { post, answerCalls, head }
}

/** Layer 1: the limits of a real node, and how many requests each refused. */
function limitedNode(initial: RpcLimits) {
  let limits = initial
  let window = { startedAt: 0, requests: 0 }
  const counts: LimitCounts = { batch_refused: 0, too_large: 0, no_batches: 0, rate_limited: 0, delayed: 0, log_range_refused: 0, batch_broken: 0 }

  /** A fixed window: the first `requests` of each `windowMs` pass. */
  function overRate({ requests, windowMs }: NonNullable<RpcLimits['rateLimit']>): boolean {
    const now = Date.now()
    if (now - window.startedAt >= windowMs) window = { startedAt: now, requests: 0 }
    return ++window.requests > requests
  }

  return {
    counts,
    set(next: RpcLimits) {
      limits = next
    },

    /** The answer a limited node gives to the whole request instead of forwarding it, if a limit applies. */
    refuse({ calls, batch }: Exchange): Reply | undefined {
      if (limits.rateLimit && overRate(limits.rateLimit)) {
        counts.rate_limited++
        return rateLimited(limits.rateLimit.retryAfterS)
      }
      if (!batch) return undefined
      if (limits.noBatches) {
        counts.no_batches++
        return jsonReply(rpcError(null, -32600, 'batch requests are not supported'))
      }
      if (limits.batchLimit && calls.length > limits.batchLimit.max) {
        counts.batch_refused++
        return batchRefusal(limits.batchLimit, calls)
      }
      return undefined
    },

    /** How a batch too long for batchBreaks fails, if it does. */
    breaks({ calls, batch }: Exchange): BatchBreak | undefined {
      if (!batch || !limits.batchBreaks || calls.length <= limits.batchBreaks.over) return undefined
      counts.batch_broken++
      return limits.batchBreaks.shape
    },

    /** How long a slow node takes: msPerCall for each call of the request. */
    delayMs({ calls, batch }: Exchange): number {
      if (!limits.msPerCall) return 0
      counts.delayed++
      return limits.msPerCall * (batch ? calls.length : 1)
    },

    /** The eth_getLogs calls over more than maxLogRange blocks, each answered with its refusal. */
    refuseLogRanges(calls: RpcCall[]): Map<RpcId, RpcAnswer> {
      const refused = new Map<RpcId, RpcAnswer>()
      const max = limits.maxLogRange
      if (max === undefined) return refused
      for (const call of calls) {
        const span = logSpan(call)
        if (span === undefined || span <= max) continue
        counts.log_range_refused++
        refused.set(call.id, rpcError(call.id, -32005, `block range too large: ${span} > ${max}`))
      }
      return refused
    },

    /** geth's batch response limit: once the answers pass maxResponseBytes, every remaining call gets -32003. */
    capResponse({ batch }: Exchange, reply: Reply): Reply {
      if (limits.maxResponseBytes === undefined || !batch) return reply
      const max = limits.maxResponseBytes
      let bytes = 0
      let capped = false
      const answers = (JSON.parse(reply.body) as RpcAnswer[]).map((answer) => {
        bytes += JSON.stringify(answer).length
        if (bytes <= max) return answer
        capped = true
        return rpcError(answer.id, -32003, 'response too large')
      })
      if (capped) counts.too_large++
      return { ...reply, body: JSON.stringify(answers) }
    },
  }
}

/** A batch over the limit, refused the way each node does it. */
function batchRefusal({ max, shape }: NonNullable<RpcLimits['batchLimit']>, calls: RpcCall[]): Reply {
  switch (shape) {
    case 'erigon':
      return jsonReply(rpcError(null, -32000, `batch limit ${max} exceeded: ${calls.length} requests given`))
    case 'besu':
      return jsonReply(calls.map((call) => rpcError(call.id, -32602, `Number of requests in batch exceeds limit of ${max}`)))
    case 'http413':
      return { status: 413, headers: plainText, body: 'Request Entity Too Large' }
    case 'http400':
      return { status: 400, headers: plainText, body: `batch size ${calls.length} exceeds the maximum of ${max}` }
  }
}

/** How many blocks an eth_getLogs call asks for (NaN for a tag such as `latest`, which is refused); undefined for other methods. */
function logSpan(call: RpcCall): number | undefined {
  if (call.method !== 'eth_getLogs') return undefined
  const filter = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string }
  return Number(filter.toBlock) - Number(filter.fromBlock) + 1
}

const calm: ChaosSettings = { faultRate: 0, faults: httpFaults, laggingShare: 0, maxLag: 0, shuffleBatches: false, swapResults: 0 }

/**
 * Layer 3: a bad provider's load-balanced pool. Every choice is drawn from the test's seeded
 * Random, and the draws are made for every request, calm settings included, so a run follows
 * from its seed.
 */
function chaoticPool(random: Random, node: Node, counts: ProxyCounts) {
  let settings: ChaosSettings = { ...calm }
  let turn = 0
  /** Requests, and faults given them, since faultRate was last set. */
  let requests = 0
  let faulted = 0
  /** Answers seen that two results of one method could be traded in. */
  let swappable = 0
  return {
    set(next: Partial<ChaosSettings>) {
      if (next.faultRate !== undefined && next.faultRate !== settings.faultRate) requests = faulted = 0
      settings = { ...settings, ...next }
    },

    /**
     * A fault for a share faultRate of requests, drawn, and never fewer than that share of the
     * requests so far; the kinds in turn rather than at random. So each kind shows up even in a short
     * run: a backfill that a few dozen large batches serve drew 6 faults in 63 requests at 20%, and
     * two of the eight kinds never came.
     */
    fault(): RpcFault {
      requests++
      const drawn = random.next() < settings.faultRate
      if (!drawn && faulted >= Math.floor(settings.faultRate * requests)) return 'ok'
      faulted++
      return settings.faults[turn++ % settings.faults.length]!
    },

    retryAfterS: () => Math.floor(random.next() * 2),
    cutAt: (length: number) => Math.max(1, Math.floor(length * random.next())),

    /** For a share laggingShare of requests, the head of the node (1..maxLag blocks behind) that answers it. */
    async lagHead(): Promise<number | undefined> {
      if (random.next() >= settings.laggingShare) return undefined
      counts.lagging++
      return Math.max(0, (await node.head()) - (1 + Math.floor(random.next() * settings.maxLag)))
    },

    /**
     * The answers, a batch's shuffled, and a share swapResults of those that can take it with two
     * results traded: the first such answer, then one in every 1/swapResults, rather than at random,
     * so a short run has some however few batches its client sends.
     */
    reshape({ calls, batch }: Exchange, reply: Reply): Reply {
      const answered = JSON.parse(reply.body) as RpcAnswer | RpcAnswer[]
      let answers = Array.isArray(answered) ? answered : [answered]
      const swappedAnswers = settings.swapResults > 0 ? swapTwoResults(calls, answers) : undefined
      const swapped = swappedAnswers && swappable++ % Math.max(1, Math.round(1 / settings.swapResults)) === 0 ? swappedAnswers : undefined
      if (swapped) {
        counts.swapped++
        answers = swapped
      }
      if (batch && settings.shuffleBatches && answers.length > 1) {
        counts.shuffled++
        answers = shuffle(answers, random)
      }
      return { ...reply, body: JSON.stringify(asAsked(batch, answers)) }
    },
  }
}

const toHex = (n: number) => `0x${n.toString(16)}`

/** The block an answer comes from: a block's number, a receipt's blockNumber; undefined for other answers. */
function answeredBlock(method: string, result: unknown): number | undefined {
  const field = method.startsWith('eth_getBlockBy') ? 'number' : method === 'eth_getTransactionReceipt' ? 'blockNumber' : undefined
  if (!field || !result || typeof result !== 'object' || !(field in result)) return undefined
  return Number.parseInt(String((result as Record<string, unknown>)[field]), 16)
}

/**
 * What a node behind at `head` answers: its `latest` and eth_blockNumber are its head, and it has
 * no block or receipt newer than that (null, as for one not mined yet).
 */
async function answerAsLaggingNode(node: Node, calls: RpcCall[], head: number, refused: Map<RpcId, RpcAnswer>): Promise<RpcAnswer[]> {
  const local = new Map(refused)
  const asked = calls.map((call) => {
    if (call.method === 'eth_blockNumber') local.set(call.id, { jsonrpc: '2.0', id: call.id, result: toHex(head) })
    if (call.method === 'eth_getBlockByNumber' && call.params?.[0] === 'latest') return { ...call, params: [toHex(head), ...call.params.slice(1)] }
    return call
  })
  const answers = await node.answerCalls(asked, local)
  return answers.map((answer, i) => {
    const block = answeredBlock(calls[i]!.method, answer.result)
    return block !== undefined && block > head ? { ...answer, result: null } : answer
  })
}

/** Two answers of one method (the first and last asked) trade results, ids kept; undefined when there is no such pair or their results are equal. */
function swapTwoResults(calls: RpcCall[], answers: RpcAnswer[]): RpcAnswer[] | undefined {
  const method = calls.find((call, i) => calls.findIndex((other) => other.method === call.method) !== i)?.method
  if (!method) return undefined
  const ids = calls.filter((call) => call.method === method).map((call) => call.id)
  const a = answers.find((answer) => answer.id === ids[0])!
  const b = answers.find((answer) => answer.id === ids[ids.length - 1])!
  if (JSON.stringify(a.result) === JSON.stringify(b.result)) return undefined
  return answers.map((answer) => (answer === a ? { ...a, result: b.result } : answer === b ? { ...b, result: a.result } : answer))
}

function shuffle<T>(items: T[], random: Random): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
