import { defaultChainParams, type ChainParams } from './generate.js'

/** Dense in everything the indexer must find, so that a small chain covers every case. */
export const testChainParams: ChainParams = {
  ...defaultChainParams,
  blocks: 12,
  txPerBlock: 60,
  attributedRate: 0.2,
  plainBundleRate: 0.05,
  malformedRate: 0.02,
  seed: 77,
}
