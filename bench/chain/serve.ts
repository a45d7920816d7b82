/**
 * The replay server as its own process, so that it never shares a core's
 * event loop with what it serves: `node --import tsx bench/chain/serve.ts
 * --chain <dir> [--head n] [--rate blocks/s] [--port p] [--profile fast|serial|remote]
 * [--profile-options '{"latencyMs": 80}']`. Prints one JSON line `{"url": …}`
 * once listening; stops on SIGTERM.
 */
import { parseArgs } from 'node:util'
import { openChain } from './files.js'
import { profileNames, profileSpec, type ProfileName } from './node-profiles.js'
import { createReplayServer } from './replay-server.js'

const { values } = parseArgs({
  options: {
    chain: { type: 'string' },
    head: { type: 'string' },
    rate: { type: 'string' },
    port: { type: 'string', default: '0' },
    profile: { type: 'string', default: 'fast' },
    'profile-options': { type: 'string', default: '{}' },
  },
})
if (!values.chain || !(profileNames as readonly string[]).includes(values.profile)) {
  process.stderr.write(`usage: serve.ts --chain <dir> [--head n] [--rate blocks/s] [--port p] [--profile ${profileNames.join('|')}] [--profile-options json]\n`)
  process.exit(64)
}
const chain = openChain(values.chain)
const server = await createReplayServer(chain, {
  ...(values.head !== undefined && { head: Number(values.head) }),
  ...(values.rate !== undefined && { rate: Number(values.rate) }),
  profile: profileSpec(values.profile as ProfileName, JSON.parse(values['profile-options']) as Record<string, number>),
}).listen(Number(values.port))
process.stdout.write(`${JSON.stringify({ url: server.url, lastBlock: chain.lastBlock, chainId: chain.chainId })}\n`)
const stop = () => {
  void server.close().then(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
