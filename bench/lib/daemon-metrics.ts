import { median } from './stats.js'

/**
 * The indexer's transport as its /metrics shows it (Prometheus text): the
 * batch size per kind of call, the requests allowed and actually in flight,
 * failures by kind. Read every second or so during a run, so the bench can
 * say where the transport settled, not only where it ended.
 */
export type TransportState = {
  /** Calls per batch now, by kind of call (several endpoints: the largest). */
  batchSizes: Record<string, number>
  /** Requests allowed in flight now, summed over endpoints. */
  concurrencyLimit: number | undefined
  inFlight: number | undefined
  failures: Record<string, number>
}

type Series = { labels: Record<string, string>; value: number }

/** Every sample of one metric, with its labels. */
export function seriesOf(text: string, name: string): Series[] {
  const out: Series[] = []
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    const labels: Record<string, string> = {}
    for (const label of (match[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]!] = label[2]!
    out.push({ labels, value: Number(match[2]) })
  }
  return out
}

const sumOf = (series: Series[]) => (series.length === 0 ? undefined : series.reduce((sum, s) => sum + s.value, 0))

export function transportStateFrom(text: string): TransportState {
  const batchSizes: Record<string, number> = {}
  for (const { labels, value } of seriesOf(text, 'indexer_rpc_batch_size')) {
    const call = labels.call ?? '?'
    batchSizes[call] = Math.max(batchSizes[call] ?? 0, value)
  }
  const failures: Record<string, number> = {}
  for (const { labels, value } of seriesOf(text, 'indexer_rpc_failures_total')) failures[labels.kind ?? '?'] = (failures[labels.kind ?? '?'] ?? 0) + value
  return {
    batchSizes,
    concurrencyLimit: sumOf(seriesOf(text, 'indexer_rpc_concurrency_limit')),
    inFlight: sumOf(seriesOf(text, 'indexer_rpc_requests_in_flight')),
    failures,
  }
}

export async function readTransportState(url: string, timeoutMs = 2_000): Promise<TransportState | undefined> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) })
    return response.ok ? transportStateFrom(await response.text()) : undefined
  } catch {
    return undefined
  }
}

export const BLOCK_CALL = 'eth_getBlockByNumber(full)'

/**
 * Where the transport settled: the median over the second half of the
 * run's samples (the first half is the search), and the state at the end.
 */
export function settledPoint(samples: readonly TransportState[]) {
  const late = samples.slice(Math.floor(samples.length / 2))
  const medianOf = (pick: (state: TransportState) => number | undefined) => {
    const values = late.map(pick).filter((value): value is number => value !== undefined)
    return values.length === 0 ? undefined : median(values)
  }
  return {
    blockBatchSize: medianOf((state) => state.batchSizes[BLOCK_CALL]),
    concurrencyLimit: medianOf((state) => state.concurrencyLimit),
    inFlight: medianOf((state) => state.inFlight),
    samples: samples.length,
  }
}
