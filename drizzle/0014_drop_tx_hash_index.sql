-- the lookup by transaction hash names its chain (findAttributionByHash) and walks attributions_unique_idx
-- (chain_id, tx_hash, user_op_index, code); this index only cost every insert a random write.
DROP INDEX "attributions_tx_hash_idx";