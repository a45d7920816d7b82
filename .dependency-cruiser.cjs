/**
 * Import rules for src/, checked by `npm test` (dependency-cruiser): the
 * layers of ARCHITECTURE.md, one way (config → rpc → attribution → store →
 * pipeline / follower → read side → http → bin).
 */
/** A folder of src/rpc/ that imports, within rpc/, only what `allowed` (a path under src/rpc/) matches. */
function rpcFolder(name, folder, allowed, comment) {
  return { name, comment, severity: 'error', from: { path: `^src/rpc/${folder}/` }, to: { path: '^src/rpc/', pathNot: `^src/rpc/${allowed}` } }
}

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'modules import each other in one direction only', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'entry-points-are-leaves',
      comment: 'src/bin starts processes; nothing imports it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/bin/' },
      to: { path: '^src/bin/' },
    },
    {
      name: 'devnet-only-from-bin',
      comment: 'the development chain (devnet/, outside src/) is tooling: only the entry points start it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/bin/' },
      to: { path: '^devnet/' },
    },
    {
      name: 'store-below-its-users',
      comment: 'the index store (ranges, blocks, attributions, totals, events) knows none of the stages that use it',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/(pipeline|follower|http|analytics|stream|metrics|validation|indexer-status|bin)/' },
    },
    {
      name: 'pipeline-and-follower-apart',
      comment: 'workers and the follower meet in the store and the queue, never in each other',
      severity: 'error',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/follower/' },
    },
    {
      name: 'metrics-below-the-stages',
      comment: 'metrics are called by the stages; they read shapes, not the stages themselves',
      severity: 'error',
      from: { path: '^src/metrics/' },
      to: { path: '^src/(pipeline|follower)/' },
    },
    {
      name: 'http-only-from-bin',
      comment: 'the HTTP layer is on top: what it shares with the CLI lives in src/contract',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(bin|http)/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'transport-knows-no-domain',
      comment: 'the JSON-RPC transport carries calls; what to look for (the scanner\'s filter) is given to it',
      severity: 'error',
      from: { path: '^src/rpc/' },
      to: { path: '^src/', pathNot: '^src/rpc/' },
    },
    {
      name: 'codec-depends-on-the-wire-shapes-only',
      comment: 'the ERC-8021 codec and record building know no other part of the service, only the JSON-RPC objects they read',
      severity: 'error',
      from: { path: '^src/attribution/' },
      to: { path: '^src/', pathNot: '^src/(attribution/|rpc/(objects|scan/block-scan)\\.ts$)' },
    },
    // rpc/ by concern, one way: wire → transport → endpoints → the calls (client.ts, batches.ts); the scanners apart
    rpcFolder('rpc-wire-below-the-policy', 'wire', 'wire/', 'rpc/wire/ moves bytes over HTTP: it knows no JSON-RPC policy, endpoint or scanner'),
    rpcFolder('rpc-transport-knows-one-node', 'transport', '(transport|wire)/', 'rpc/transport/ is the policy for one node over the wire: it knows no endpoint pool, scanner or call'),
    rpcFolder('rpc-endpoints-below-the-calls', 'endpoints', '(endpoints/|transport/|errors\\.ts$)', 'rpc/endpoints/ routes work among transports: the calls (client, batches) and scanners sit elsewhere'),
    rpcFolder('rpc-scanners-read-bytes-only', 'scan', '(scan/|objects\\.ts$)', "rpc/scan/ reads answers' bytes: it knows the JSON-RPC objects, nothing that sends or routes"),
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
}
