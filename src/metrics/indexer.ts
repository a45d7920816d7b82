import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { createLiveStageMetrics } from './live-stages.js'

/** What a fetched range holds, as the counters read it (the pipeline's FetchedRange fits). */
type IndexedRangeCounts = { blocks: readonly unknown[]; txCount: number; malformed: readonly unknown[]; attributions: ReadonlyArray<{ kind: string }> }

/**
 * Process-local indexer metrics: what this process's follower and workers
 * did. Chain-wide state (head, indexed block, queue depth) is read from
 * Postgres and Redis at scrape time by src/metrics/state.ts, so any process
 * serving /metrics reports it.
 */
export function createIndexerMetrics(registry: Registry) {
  const label = (chainId: number | undefined) => ({ chain_id: String(chainId ?? 'unknown') })
  const rangesProcessed = new Counter({ name: 'indexer_ranges_processed_total', help: 'Block ranges indexed', labelNames: ['chain_id'], registers: [registry] })
  const denseRanges = new Counter({
    name: 'indexer_dense_ranges_total',
    help: 'Ranges whose blocks held more rows than MAX_RANGE_ROWS, by outcome: split into ranges within it, or a single block indexed alone',
    labelNames: ['chain_id', 'outcome'],
    registers: [registry],
  })
  const rangesFailed = new Counter({ name: 'indexer_range_failures_total', help: 'Range job attempts that failed and will be retried', labelNames: ['chain_id'], registers: [registry] })
  const blocks = new Counter({ name: 'indexer_blocks_processed_total', help: 'Blocks indexed', labelNames: ['chain_id'], registers: [registry] })
  const transactions = new Counter({ name: 'indexer_transactions_scanned_total', help: 'Transactions scanned for a suffix', labelNames: ['chain_id'], registers: [registry] })
  const attributions = new Counter({ name: 'indexer_attributions_total', help: 'Attributions found, by kind', labelNames: ['chain_id', 'kind'], registers: [registry] })
  const malformed = new Counter({ name: 'indexer_malformed_suffixes_total', help: 'Suffixes with the marker that could not be decoded', labelNames: ['chain_id'], registers: [registry] })
  const inserted = new Counter({ name: 'indexer_attribution_rows_inserted_total', help: 'Attribution rows written (one per code)', labelNames: ['chain_id'], registers: [registry] })
  const rpcResponses = new Counter({ name: 'indexer_rpc_http_responses_total', help: 'HTTP responses from RPC nodes by status', labelNames: ['status'], registers: [registry] })
  const rpcErrors = new Counter({ name: 'indexer_rpc_errors_total', help: 'RPC calls that failed after retries', labelNames: ['chain_id'], registers: [registry] })
  const reorgs = new Histogram({ name: 'indexer_reorg_depth_blocks', help: 'Depth of reorgs rolled back', labelNames: ['chain_id'], buckets: [1, 2, 4, 8, 16, 64, 256], registers: [registry] })
  const reorgRefused = new Gauge({
    name: 'indexer_reorg_refused',
    help: '1 while the follower refuses a reorg that reaches below the blocks committed as final (see /readyz)',
    labelNames: ['chain_id'],
    registers: [registry],
  })
  const head = new Gauge({ name: 'indexer_follower_head_block', help: 'Head block seen by this follower', labelNames: ['chain_id'], registers: [registry] })
  const indexed = new Gauge({ name: 'indexer_follower_indexed_block', help: 'Contiguously indexed block seen by this follower', labelNames: ['chain_id'], registers: [registry] })
  const lag = new Gauge({ name: 'indexer_follower_lag_blocks', help: 'Blocks between the indexing target and the indexed block', labelNames: ['chain_id'], registers: [registry] })
  const rpcBatchSize = new Gauge({ name: 'indexer_rpc_batch_size', help: 'Calls per JSON-RPC batch the transport uses now, per node and kind of call', labelNames: ['endpoint', 'call'], registers: [registry] })
  const rpcInFlight = new Gauge({ name: 'indexer_rpc_requests_in_flight', help: 'HTTP requests to the node in flight', labelNames: ['endpoint'], registers: [registry] })
  const rpcConcurrency = new Gauge({ name: 'indexer_rpc_concurrency_limit', help: 'Requests the transport allows in flight now (AIMD)', labelNames: ['endpoint'], registers: [registry] })
  const rpcFailures = new Counter({ name: 'indexer_rpc_failures_total', help: 'Failed RPC requests or calls by kind (batch_limit, response_too_large, rate_limited, timeout, http_error, network, unreadable, unsupported_framing, item_error)', labelNames: ['endpoint', 'kind'], registers: [registry] })
  const rpcPointBatch = new Gauge({ name: 'indexer_rpc_operating_batch_size', help: 'Calls per batch at the operating point the transport found by measured throughput (before per-method byte and node limits)', labelNames: ['endpoint'], registers: [registry] })
  const rpcPointInFlight = new Gauge({ name: 'indexer_rpc_operating_in_flight', help: 'Requests in flight at the operating point the transport found by measured throughput', labelNames: ['endpoint'], registers: [registry] })
  const rpcPointSettled = new Gauge({ name: 'indexer_rpc_operating_point_settled', help: '1 once no neighbouring point delivers more (re-probed now and then), 0 while searching', labelNames: ['endpoint'], registers: [registry] })
  const rpcThroughput = new Gauge({ name: 'indexer_rpc_throughput_per_second', help: 'Full blocks the node delivered per second over the last measured window (the search measures those alone), by unit (calls, bytes)', labelNames: ['endpoint', 'unit'], registers: [registry] })
  const backfillRate = new Gauge({ name: 'indexer_backfill_rate_per_second', help: 'Backfill speed over the last 10 s report, by what is counted (blocks, transactions, attributions); 0 once caught up', labelNames: ['chain_id', 'unit'], registers: [registry] })
  const backfillRemaining = new Gauge({ name: 'indexer_backfill_blocks_remaining', help: 'Blocks the backfill still has to index, at the last report', labelNames: ['chain_id'], registers: [registry] })
  const backfillEta = new Gauge({ name: 'indexer_backfill_eta_seconds', help: 'Estimated seconds to catch up at the last report speed (0 once caught up, absent while unknown)', labelNames: ['chain_id'], registers: [registry] })
  // per RPC endpoint, read from the pools at scrape time (label: the redacted URL)
  const endpointSources: Array<() => readonly EndpointMetricState[]> = []
  const endpointStates = () => endpointSources.flatMap((source) => source())
  new Gauge({
    name: 'indexer_rpc_endpoint_healthy',
    help: 'Whether the RPC endpoint gets work (1) or is routed around until a probe answers (0)',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset()
      for (const state of endpointStates()) this.set({ endpoint: state.url }, state.state === 'healthy' ? 1 : 0)
    },
  })
  new Gauge({
    name: 'indexer_rpc_endpoint_throughput',
    help: 'What the RPC endpoint delivers per busy second (moving average over 2 s windows), by unit (items: blocks, receipts, headers; bytes)',
    labelNames: ['endpoint', 'unit'],
    registers: [registry],
    collect() {
      this.reset()
      for (const state of endpointStates()) {
        if (state.itemsPerSecond !== null) this.set({ endpoint: state.url, unit: 'items' }, state.itemsPerSecond)
        if (state.bytesPerSecond !== null) this.set({ endpoint: state.url, unit: 'bytes' }, state.bytesPerSecond)
      }
    },
  })
  new Gauge({
    name: 'indexer_rpc_endpoint_items',
    help: 'Items (blocks, receipts, headers) the RPC endpoint delivered since the process started',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset()
      for (const state of endpointStates()) this.set({ endpoint: state.url }, state.items)
    },
  })
  new Gauge({
    name: 'indexer_rpc_endpoint_failed_works',
    help: 'Works (a range of blocks, a set of receipts, a header) that failed on the RPC endpoint and went to another, since the process started',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset()
      for (const state of endpointStates()) this.set({ endpoint: state.url }, state.errors)
    },
  })
  const pending = new Gauge({ name: 'indexer_follower_pending_ranges', help: 'Ranges waiting to be indexed', labelNames: ['chain_id'], registers: [registry] })

  return {
    ...createLiveStageMetrics(registry),
    rangeIndexed(chainId: number, fetched: IndexedRangeCounts, rowsInserted: number) {
      rangesProcessed.inc(label(chainId))
      blocks.inc(label(chainId), fetched.blocks.length)
      transactions.inc(label(chainId), fetched.txCount)
      inserted.inc(label(chainId), rowsInserted)
      malformed.inc(label(chainId), fetched.malformed.length)
      // counted per kind first: a labelled inc per record costs a labels object and its hash each, on a range of thousands
      let transactionRecords = 0
      for (const record of fetched.attributions) if (record.kind === 'transaction') transactionRecords++
      const userOperationRecords = fetched.attributions.length - transactionRecords
      if (transactionRecords > 0) attributions.inc({ ...label(chainId), kind: 'transaction' }, transactionRecords)
      if (userOperationRecords > 0) attributions.inc({ ...label(chainId), kind: 'userOperation' }, userOperationRecords)
    },
    rangeFailed: (chainId: number | undefined) => rangesFailed.inc(label(chainId)),
    denseRange: (chainId: number, outcome: 'split' | 'block_alone') => denseRanges.inc({ ...label(chainId), outcome }),
    rpcResponse: (status: number) => rpcResponses.inc({ status: String(status) }),
    rpcError: (chainId: number) => rpcErrors.inc(label(chainId)),
    reorg: (chainId: number, depth: number) => reorgs.observe(label(chainId), depth),
    reorgRefused: (chainId: number, refused: boolean) => reorgRefused.set(label(chainId), refused ? 1 : 0),
    head: (chainId: number, block: number) => head.set(label(chainId), block),
    indexed(chainId: number, through: number, target: number) {
      indexed.set(label(chainId), through)
      lag.set(label(chainId), Math.max(0, target - through))
    },
    pendingRanges: (chainId: number, count: number) => pending.set(label(chainId), count),
    backfill(chainId: number, progress: BackfillProgress) {
      backfillRate.set({ ...label(chainId), unit: 'blocks' }, progress.blocksPerSecond)
      backfillRate.set({ ...label(chainId), unit: 'transactions' }, progress.transactionsPerSecond)
      backfillRate.set({ ...label(chainId), unit: 'attributions' }, progress.attributionsPerSecond)
      backfillRemaining.set(label(chainId), progress.blocksRemaining)
      if (progress.etaSeconds === undefined) backfillEta.remove(label(chainId))
      else backfillEta.set(label(chainId), progress.etaSeconds)
    },
    /** Reports the state of a pool's endpoints at each scrape. */
    rpcEndpoints(states: () => readonly EndpointMetricState[]) {
      endpointSources.push(states)
    },
    /** The transport's view of one node, labelled by its redacted URL (rpc/endpoints/endpoint-redact.ts: never an API key). */
    rpcTransport(endpoint: string) {
      return {
        batchSize: (call: string, size: number) => rpcBatchSize.set({ endpoint, call }, size),
        inFlight(count: number, limit: number) {
          rpcInFlight.set({ endpoint }, count)
          rpcConcurrency.set({ endpoint }, limit)
        },
        failure: (kind: string) => rpcFailures.inc({ endpoint, kind }),
        operatingPoint(report: RpcOperatingPoint) {
          rpcPointBatch.set({ endpoint }, report.batch)
          rpcPointInFlight.set({ endpoint }, report.inFlight)
          rpcPointSettled.set({ endpoint }, report.settled ? 1 : 0)
          rpcThroughput.set({ endpoint, unit: 'calls' }, Math.round(report.callsPerSecond))
          rpcThroughput.set({ endpoint, unit: 'bytes' }, Math.round(report.bytesPerSecond))
        },
      }
    },
  }
}

/** What the metrics read of an endpoint (rpc/endpoints/endpoint-pool.ts EndpointState fits). */
type EndpointMetricState = { url: string; state: string; itemsPerSecond: number | null; bytesPerSecond: number | null; items: number; errors: number }

/** The transport's operating point as the gauges read it (rpc/transport/transport.ts's OperatingPointReport fits). */
export type RpcOperatingPoint = { batch: number; inFlight: number; settled: boolean; callsPerSecond: number; bytesPerSecond: number }

export type BackfillProgress = {
  blocksPerSecond: number
  transactionsPerSecond: number
  attributionsPerSecond: number
  blocksRemaining: number
  etaSeconds: number | undefined
}

export type IndexerMetrics = ReturnType<typeof createIndexerMetrics>
