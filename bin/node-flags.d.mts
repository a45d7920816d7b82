// Types of node-flags.mjs, for the TypeScript that imports it (bench/lib/indexer.ts, the launch flags' test).
export declare const DAEMON_NODE_FLAGS: readonly string[]
