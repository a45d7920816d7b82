import { describe, expect, it } from 'vitest'
import { BLOCK_CALL, settledPoint, transportStateFrom, type TransportState } from './daemon-metrics.js'

const metrics = `# HELP indexer_rpc_batch_size Calls per JSON-RPC batch
# TYPE indexer_rpc_batch_size gauge
indexer_rpc_batch_size{endpoint="http://a",call="eth_getBlockByNumber(full)"} 28
indexer_rpc_batch_size{endpoint="http://b",call="eth_getBlockByNumber(full)"} 12
indexer_rpc_batch_size{endpoint="http://a",call="eth_getTransactionReceipt"} 50
indexer_rpc_concurrency_limit{endpoint="http://a"} 8
indexer_rpc_concurrency_limit{endpoint="http://b"} 3
indexer_rpc_requests_in_flight{endpoint="http://a"} 5
indexer_rpc_requests_in_flight{endpoint="http://b"} 1
indexer_rpc_failures_total{endpoint="http://a",kind="rate_limited"} 4
indexer_rpc_failures_total{endpoint="http://b",kind="rate_limited"} 2
indexer_rpc_failures_total{endpoint="http://b",kind="timeout"} 1
`

describe('transport state from /metrics', () => {
  it('reads batch sizes per call, and sums what is allowed and in flight over endpoints', () => {
    expect(transportStateFrom(metrics)).toEqual({
      batchSizes: { [BLOCK_CALL]: 28, eth_getTransactionReceipt: 50 },
      concurrencyLimit: 11,
      inFlight: 6,
      failures: { rate_limited: 6, timeout: 1 },
    })
  })

  it('reads nothing from an answer without the gauges', () => {
    expect(transportStateFrom('process_cpu_seconds_total 1.5\n')).toEqual({ batchSizes: {}, concurrencyLimit: undefined, inFlight: undefined, failures: {} })
  })

  it('settles on the median of the second half of the samples: the first half is the search', () => {
    const state = (batch: number, limit: number): TransportState => ({ batchSizes: { [BLOCK_CALL]: batch }, concurrencyLimit: limit, inFlight: limit, failures: {} })
    const samples = [state(50, 4), state(44, 8), state(10, 6), state(10, 4), state(12, 4), state(10, 3)]
    expect(settledPoint(samples)).toEqual({ blockBatchSize: 10, concurrencyLimit: 4, inFlight: 4, samples: 6 })
  })
})
