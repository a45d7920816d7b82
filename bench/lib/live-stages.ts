/**
 * The daemon's `indexer_live_stage_seconds` histogram (src/metrics/live-stages.ts)
 * read from its /metrics: per stage, the count, mean and quantiles of what was
 * observed since `before` (quantiles by linear interpolation within a bucket,
 * as PromQL's histogram_quantile does).
 */
const METRIC = 'indexer_live_stage_seconds'

export type StageHistogram = { buckets: Array<{ le: number; count: number }>; sum: number; count: number }
export type StageSnapshot = Map<string, StageHistogram>
export type StageQuantiles = { stage: string; count: number; meanMs: number; p50Ms: number; p90Ms: number; p99Ms: number }

/** Parses the histogram's series out of a Prometheus text exposition (summed over every label but `stage`). */
export function parseStages(text: string): StageSnapshot {
  const stages: StageSnapshot = new Map()
  const of = (stage: string) => {
    let histogram = stages.get(stage)
    if (!histogram) stages.set(stage, (histogram = { buckets: [], sum: 0, count: 0 }))
    return histogram
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith(METRIC)) continue
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line)
    if (!match) continue
    const [, name, labels, value] = match
    const stage = /stage="([^"]*)"/.exec(labels!)?.[1]
    if (stage === undefined) continue
    const histogram = of(stage)
    if (name === `${METRIC}_bucket`) {
      const le = /le="([^"]*)"/.exec(labels!)?.[1]
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le)
      const bucket = histogram.buckets.find((b) => b.le === bound)
      if (bucket) bucket.count += Number(value)
      else histogram.buckets.push({ le: bound, count: Number(value) })
    } else if (name === `${METRIC}_sum`) histogram.sum += Number(value)
    else if (name === `${METRIC}_count`) histogram.count += Number(value)
  }
  for (const histogram of stages.values()) histogram.buckets.sort((a, b) => a.le - b.le)
  return stages
}

/** The value below which a fraction `q` of the observations fall, interpolated within its bucket. */
export function histogramQuantile(q: number, buckets: ReadonlyArray<{ le: number; count: number }>): number {
  const total = buckets.at(-1)?.count ?? 0
  if (total === 0) return Number.NaN
  const rank = q * total
  let lower = 0
  let below = 0
  for (const { le, count } of buckets) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return lower
      return lower + ((le - lower) * (rank - below)) / Math.max(1, count - below)
    }
    lower = le
    below = count
  }
  return lower
}

function difference(after: StageHistogram, before: StageHistogram | undefined): StageHistogram {
  if (!before) return after
  return {
    buckets: after.buckets.map(({ le, count }) => ({ le, count: count - (before.buckets.find((b) => b.le === le)?.count ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  }
}

/** The stages as observed now, and their quantiles since `before` (empty when the daemon has no such histogram). */
export async function readLiveStages(url: string, before?: StageSnapshot): Promise<{ snapshot: StageSnapshot; quantiles: StageQuantiles[] }> {
  let text = ''
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })
    if (response.ok) text = await response.text()
  } catch {
    // no figures: the run's lag stands alone
  }
  const snapshot = parseStages(text)
  const quantiles: StageQuantiles[] = []
  for (const [stage, after] of snapshot) {
    const run = difference(after, before?.get(stage))
    if (run.count <= 0) continue
    quantiles.push({
      stage,
      count: run.count,
      meanMs: (run.sum / run.count) * 1000,
      p50Ms: histogramQuantile(0.5, run.buckets) * 1000,
      p90Ms: histogramQuantile(0.9, run.buckets) * 1000,
      p99Ms: histogramQuantile(0.99, run.buckets) * 1000,
    })
  }
  return { snapshot, quantiles }
}
