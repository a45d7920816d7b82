import type { Database } from '../db/client.js'
import type { Logger } from '../logger.js'
import type { Rpc } from '../rpc/client.js'
import { recordGenesis, storedGenesis } from '../store/chain-state.js'
import { rollbackAbove } from '../store/rollback.js'

/** The node serves another chain than the one this database indexed under the same chain id. */
export class ChainIdentityError extends Error {
  override name = 'ChainIdentityError'
}

export type IdentifiedChain = {
  chainId: number
  rpcUrl: string
  startBlock: number
  /** The local devnet: a new chain on every start, whose old index is reset instead of refused. */
  devnet?: boolean | undefined
}

/** Block 0's hash; a few tries, as a load-balanced or flaky node may miss one answer. */
async function readGenesis(rpc: Rpc): Promise<string | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      const header = await rpc.header(0)
      if (header) return header.hash.toLowerCase()
      if (attempt >= 5) return undefined
    } catch (error) {
      if (attempt >= 5) throw error
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * attempt))
  }
}

/**
 * A chain id does not identify a chain: every anvil is 31337, and an RPC URL
 * can be pointed at another network. Block 0's hash does. The first follower
 * start stores it; later starts compare. Left alone, a restarted devnet looks
 * like the deepest reorg there is (every block differs) and a wrong node
 * silently mixes two chains' totals.
 */
export async function verifyChainIdentity({ db, rpc, chain, logger }: { db: Database; rpc: Rpc; chain: IdentifiedChain; logger: Logger }): Promise<void> {
  const genesis = await readGenesis(rpc)
  if (!genesis) throw new ChainIdentityError(`chain ${chain.chainId}: the node at ${new URL(chain.rpcUrl).host} does not serve block 0, so the chain cannot be identified`)
  const stored = await storedGenesis(db.$client, chain.chainId)
  if (stored === genesis) return
  if (stored !== undefined) {
    if (!chain.devnet) {
      throw new ChainIdentityError(
        `chain ${chain.chainId}: the node at ${new URL(chain.rpcUrl).host} has genesis block ${genesis}, but this database indexed chain ${chain.chainId} with genesis ${stored}; ` +
          'refusing to mix two chains (use another DATABASE_URL for this node, or the node of the indexed chain)',
      )
    }
    const sql = await db.$client.reserve()
    try {
      const removed = await rollbackAbove(sql, chain.chainId, chain.startBlock - 1)
      logger.info(
        { chain_id: chain.chainId, genesis, previous_genesis: stored, removed },
        'new devnet chain (its genesis differs from the indexed one): the previous devnet run’s index was reset',
      )
    } finally {
      sql.release()
    }
  }
  // first start, or a database that predates the column: this node's chain is the indexed one from now on
  await recordGenesis(db.$client, chain.chainId, genesis)
}
