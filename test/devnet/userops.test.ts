import { Attribution } from 'ox/erc8021'
import { parseEventLogs, type Address } from 'viem'
import { entryPoint07Abi, getUserOperationHash } from 'viem/account-abstraction'
import { entryPoint06Address, entryPoint07Address, entryPoint08Address } from 'viem/account-abstraction'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deployContracts, simpleAccountFactoryAbi } from '../../devnet/contracts.js'
import { entryPointVersions } from '../../devnet/entry-points.js'
import { sendDevnetTransaction, transferGas, waitForReceipt } from '../../devnet/send.js'
import { createSmartAccounts, sendBundle, signUserOperation, userOperationOutcomes } from '../../devnet/userops.js'
import { startTestChain, type TestChain } from '../support/chain.js'

const canonical = { '0.6': entryPoint06Address, '0.7': entryPoint07Address, '0.8': entryPoint08Address }
const recipient: Address = '0x000000000000000000000000000000000000bEEF'

describe('UserOperations on EntryPoint 0.6, 0.7 and 0.8', () => {
  let chain: TestChain

  beforeAll(async () => {
    chain = await startTestChain()
  })
  afterAll(async () => {
    await chain?.stop()
  })

  it('deploys each EntryPoint at its canonical address, and a factory bound to it', async () => {
    for (const version of entryPointVersions) {
      const deployed = chain.contracts.entryPoints[version]
      expect(deployed.address).toBe(canonical[version])
      expect((await chain.client.getCode({ address: deployed.address }))?.length).toBeGreaterThan(1_000)
      const implementation = await chain.client.readContract({ address: deployed.factory, abi: simpleAccountFactoryAbi, functionName: 'accountImplementation' })
      expect(implementation).toBe(deployed.accountImplementation)
    }
  })

  it('deploying again changes nothing', async () => {
    const height = await chain.client.getBlockNumber()
    expect(await deployContracts({ client: chain.client, deployer: chain.wallets.deployer })).toEqual(chain.contracts)
    expect(await chain.client.getBlockNumber()).toBe(height)
  })

  for (const version of entryPointVersions) {
    it(`${version}: creates the account, runs an attributed op, reports a reverting op as failed`, async () => {
      const accounts = await createSmartAccounts({ client: chain.client, contracts: chain.contracts, funder: chain.wallets.deployer, perEntryPoint: 2, seed: `test-${version}` })
      const [first, second] = accounts.filter((account) => account.version === version)
      expect(first!.deployed).toBe(false)
      const suffix = Attribution.toDataSuffix({ codes: ['baseapp'] })
      const attributed = await signUserOperation({ chainId: chain.chainId, account: first!, call: { to: recipient, value: 1n }, suffix })
      const reverting = await signUserOperation({ chainId: chain.chainId, account: second!, call: { to: chain.contracts.reverter }, suffix })
      expect(attributed.callData.endsWith(suffix.slice(2))).toBe(true)
      expect(attributed.hash).toBe(
        getUserOperationHash({ chainId: chain.chainId, entryPointAddress: canonical[version], entryPointVersion: version, userOperation: attributed.userOperation }),
      )

      const hash = await sendBundle(chain.client, { bundler: chain.wallets.bundler, operations: [attributed, reverting] })
      const receipt = await chain.client.waitForTransactionReceipt({ hash })
      expect(receipt.status).toBe('success')
      expect(receipt.to).toBe(canonical[version].toLowerCase())
      const outcomes = userOperationOutcomes(receipt.logs, canonical[version])
      expect(outcomes.map((outcome) => [outcome.userOpHash, outcome.success])).toEqual([
        [attributed.hash, true],
        [reverting.hash, false],
      ])
      const deployedEvents = parseEventLogs({ abi: entryPoint07Abi, eventName: 'AccountDeployed', logs: receipt.logs })
      expect(deployedEvents.map((event) => event.args.sender)).toEqual([first!.address, second!.address])
      expect(await chain.client.getBalance({ address: recipient })).toBeGreaterThan(0n)

      // the account now exists: the next op carries no factory call
      const again = await signUserOperation({ chainId: chain.chainId, account: first!, call: { to: recipient, value: 1n } })
      expect(again.nonce).toBe(1n)
      const next = await chain.client.waitForTransactionReceipt({ hash: await sendBundle(chain.client, { bundler: chain.wallets.bundler, operations: [again] }) })
      expect(userOperationOutcomes(next.logs, canonical[version]).map((outcome) => outcome.success)).toEqual([true])
      expect(parseEventLogs({ abi: entryPoint07Abi, eventName: 'AccountDeployed', logs: next.logs })).toEqual([])
    })
  }
})

describe('waitForReceipt', () => {
  let chain: TestChain

  beforeAll(async () => {
    chain = await startTestChain()
  })
  afterAll(async () => {
    await chain?.stop()
  })

  it('mines a block when sent transactions sit in the pool, and returns their receipts in order', async () => {
    // the node stops mining on its own: the transactions wait in the pool as a stuck one would
    await chain.client.setAutomine(false)
    try {
      const height = await chain.client.getBlockNumber()
      const from = chain.wallets.deployer
      const hashes = [
        await sendDevnetTransaction(chain.client, { from, to: recipient, value: 1n, gas: transferGas(0) }),
        await sendDevnetTransaction(chain.client, { from, to: recipient, value: 2n, gas: transferGas(0) }),
      ]
      const receipts = await Promise.all(hashes.map((hash) => waitForReceipt(chain.client, hash)))
      expect(receipts.map((receipt) => [receipt.transactionHash, receipt.status])).toEqual(hashes.map((hash) => [hash, 'success']))
      expect(receipts[0]!.blockNumber).toBe(height + 1n)
    } finally {
      await chain.client.setAutomine(true)
    }
  })
})
