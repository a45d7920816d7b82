import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { entryPoint06Address, entryPoint07Address, entryPoint08Address } from 'viem/account-abstraction'
import { describe, expect, it } from 'vitest'
import { decodeAttribution } from '../../src/attribution/decode.js'
import { startAnvil } from '../../devnet/anvil.js'
import { startDevnet } from '../../devnet/index.js'
import { until } from '../support/poll.js'

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function answers(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
    })
    return response.ok
  } catch {
    return false
  }
}

describe('anvil process', () => {
  it('starts on a free port and stop() ends it', async () => {
    const anvil = await startAnvil({ port: 0, chainId: 4242 })
    expect(anvil.port).toBeGreaterThan(0)
    expect(await answers(anvil.rpcUrl)).toBe(true)
    await anvil.stop()
    expect(anvil.process.exitCode !== null || anvil.process.signalCode !== null).toBe(true)
    expect(await answers(anvil.rpcUrl)).toBe(false)
    await anvil.stop()
  })

  it('noMining: blocks appear only when asked for', async () => {
    const anvil = await startAnvil({ noMining: true })
    try {
      const call = async (method: string) => {
        const response = await fetch(anvil.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
        })
        return ((await response.json()) as { result: unknown }).result
      }
      expect(await call('anvil_getAutomine')).toBe(false)
      expect(await call('eth_blockNumber')).toBe('0x0')
      await call('evm_mine')
      expect(await call('eth_blockNumber')).toBe('0x1')
    } finally {
      await anvil.stop()
    }
  })

  it('two chains run side by side on different ports', async () => {
    const [a, b] = await Promise.all([startAnvil(), startAnvil()])
    expect(a.port).not.toBe(b.port)
    await Promise.all([a.stop(), b.stop()])
  })

  it('a port in use is a clear error', async () => {
    const first = await startAnvil()
    try {
      await expect(startAnvil({ port: first.port, startTimeoutMs: 5_000 })).rejects.toThrow(/anvil exited|did not start/)
    } finally {
      await first.stop()
    }
  })

  it('does not outlive a parent killed with SIGKILL', async () => {
    const script = fileURLToPath(new URL('./fixtures/hold-anvil.ts', import.meta.url))
    const parent = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const [line] = (await once(createInterface({ input: parent.stdout! }), 'line')) as [string]
    const { pid, rpcUrl } = JSON.parse(line) as { pid: number; rpcUrl: string }
    expect(await answers(rpcUrl)).toBe(true)
    parent.kill('SIGKILL')
    await until('the devnet process to exit', () => !isAlive(pid), { timeoutMs: 20_000 })
    expect(await answers(rpcUrl)).toBe(false)
  })
})

describe('startDevnet', () => {
  it('says it is starting a devnet, generates traffic every block, and stops cleanly', async () => {
    const lines: Array<Record<string, unknown>> = []
    // debug: each batch's line; at info only the summary every 30 s (the first right after the first batch)
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) })
    const devnet = await startDevnet({ logger, port: 0, blockTimeSeconds: 1 })
    try {
      expect(String(lines[0]?.msg)).toMatch(/no RPC_URL configured.*devnet/)
      expect(devnet.chain).toMatchObject({ chainId: 31337, rpcUrl: devnet.anvil.rpcUrl, startBlock: 0 })
      expect(devnet.chain.confirmations).toBeGreaterThanOrEqual(0)
      expect(devnet.chain.confirmations).toBeLessThanOrEqual(2)
      expect(devnet.chain.entryPoints).toEqual([entryPoint06Address, entryPoint07Address, entryPoint08Address])

      await until('three devnet traffic lines', () => lines.filter((line) => line.msg === 'devnet traffic mined').length >= 3, { timeoutMs: 20_000 })
      const batch = lines.find((line) => line.msg === 'devnet traffic mined')!
      expect(batch).toMatchObject({ level: 20, chain_id: 31337, sent: expect.any(Object), truth: expect.any(Object) })
      // one summary so far at info, with a hash to try validate on
      expect(lines.filter((line) => line.msg === 'devnet traffic summary')).toEqual([
        expect.objectContaining({ level: 30, chain_id: 31337, every_s: 30, batches: 1, sample_tx_hash: expect.any(String) }),
      ])

      // every attributed transaction in the ledger really is on chain, with the codes the ledger lists
      const truth = devnet.truth()
      const transactionRows = truth.attributions.filter((row) => row.kind === 'transaction')
      expect(transactionRows.length).toBeGreaterThan(0)
      for (const row of transactionRows) {
        const tx = await devnet.client.getTransaction({ hash: row.txHash })
        const decoded = decodeAttribution(tx.input)
        expect(decoded.kind).toBe('attributed')
        if (decoded.kind === 'attributed') expect(decoded.codes).toContain(row.code)
        expect(Number(tx.blockNumber)).toBe(row.blockNumber)
      }
      // interval mining: blocks keep coming with nobody asking
      const height = await devnet.client.getBlockNumber()
      await until('two more devnet blocks', async () => (await devnet.client.getBlockNumber()) > height + 1n, { timeoutMs: 20_000 })
    } finally {
      await devnet.stop()
    }
    expect(devnet.anvil.process.exitCode !== null || devnet.anvil.process.signalCode !== null).toBe(true)
    expect(lines.at(-1)?.msg).toBe('devnet stopped')
    expect(lines.some((line) => line.level === 50)).toBe(false)
  })
})
