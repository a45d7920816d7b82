import { median } from './stats.js'

/**
 * Whether a long backfill's memory grows with the chain: the memory bench's
 * judgment, kept apart so it can be tried on series made to leak.
 *
 * The first windows of a run measure V8 sizing its heap, not a leak: RSS
 * climbs from ~300 to ~400 MiB over the first 30% of a 5M backfill and is
 * flat after (bench/LOG.md). The old figure (median of 10–20% against
 * 90–100%) caught that climb and missed in every run since 2026-11-27,
 * leak or not. So the warm-up is left out, and what is judged is the trend
 * of RSS over the rest, by block: a Theil–Sen slope (the median of the
 * pairwise slopes), which the ±50 MiB swings of major collections do not
 * move as they move two windows' medians, times the blocks after warm-up.
 * A leak grows RSS in proportion to the blocks indexed and shows as that
 * slope; a healthy run's slope is noise around zero.
 */

export type GrowthSample = { through: number; rss: number }

/** The share of the run's blocks left out as warm-up. */
export const WARM_UP_SHARE = 0.3

/** The most growth over the run after warm-up a healthy backfill shows (a leak of ~15 bytes a transaction on the 5M run breaks it). */
export const GROWTH_TARGET_BYTES = 50e6

/** Pairwise slopes grow with the square of the samples: more than this many are thinned evenly first. */
const MOST_POINTS = 400

/** The median of the slopes between every two samples (Theil–Sen): bytes per block. */
export function robustSlope(points: readonly GrowthSample[]): number {
  const step = Math.max(1, Math.ceil(points.length / MOST_POINTS))
  const kept = points.filter((_, index) => index % step === 0)
  const slopes: number[] = []
  for (let i = 0; i < kept.length; i++) {
    for (let j = i + 1; j < kept.length; j++) {
      const blocks = kept[j]!.through - kept[i]!.through
      if (blocks !== 0) slopes.push((kept[j]!.rss - kept[i]!.rss) / blocks)
    }
  }
  return median(slopes)
}

export type GrowthJudgment = {
  /** RSS growth over the blocks after warm-up, from its trend (bytes). */
  growth: number
  /** The samples the trend was taken from. */
  samples: number
  /** Median RSS of the first and last tenth of the judged span, shown beside the trend. */
  startRss: number
  endRss: number
  met: boolean
}

/** The growth after warm-up of samples taken over a run of `lastBlock` blocks. */
export function judgeGrowth(samples: readonly GrowthSample[], lastBlock: number, options: { warmUpShare?: number; targetBytes?: number } = {}): GrowthJudgment {
  const warmUpShare = options.warmUpShare ?? WARM_UP_SHARE
  const targetBytes = options.targetBytes ?? GROWTH_TARGET_BYTES
  const from = lastBlock * warmUpShare
  const judged = samples.filter((sample) => sample.through >= from)
  const span = lastBlock - from
  const growth = judged.length >= 2 ? robustSlope(judged) * span : Number.NaN
  const tenth = (low: number, high: number) => median(judged.filter((sample) => sample.through >= from + span * low && sample.through <= from + span * high).map((sample) => sample.rss))
  return { growth, samples: judged.length, startRss: tenth(0, 0.1), endRss: tenth(0.9, 1), met: Number.isFinite(growth) && growth < targetBytes }
}
