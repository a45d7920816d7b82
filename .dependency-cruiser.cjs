/**
 * Import rules for src/, checked by `npm test` (dependency-cruiser). They
 * state what holds today; issue 14 (one-way layers: config → rpc →
 * attribution → store → pipeline / follower → http) will add the rest.
 */
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
      comment: 'the development chain is tooling: only the entry points start it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(bin|devnet)/' },
      to: { path: '^src/devnet/' },
    },
    {
      name: 'codec-depends-on-nothing',
      comment: 'the ERC-8021 codec and record building know no other part of the service',
      severity: 'error',
      from: { path: '^src/attribution/' },
      to: { path: '^src/', pathNot: '^src/attribution/' },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
}
