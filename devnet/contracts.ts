import { createRequire } from 'node:module'
import { concat, encodeAbiParameters, getContractAddress, isHex, parseAbi, type Address, type Hex } from 'viem'
import type { DevnetClient } from './client.js'
import { entryPointAddresses, entryPointVersions, type EntryPointVersion } from './entry-points.js'
import { sendDevnetTransaction, waitForReceipt, type Sender } from './send.js'


/**
 * Nick's deterministic deployment proxy, present on anvil from genesis. The
 * canonical EntryPoints were deployed through it; with the published
 * artifacts' creation code and the same salts they land on their canonical
 * addresses here too, constructor and immutables included (EntryPoint's
 * SenderCreator, 0.8's EIP-712 domain), so nothing has to be patched.
 */
export const DETERMINISTIC_DEPLOYER: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c'

const ZERO_SALT: Hex = `0x${'00'.repeat(32)}`

/** Salts the canonical deployments used with the deterministic deployer. */
const entryPointReleases: Record<EntryPointVersion, { packageName: string; salt: Hex; address: Address }> = {
  '0.6': { packageName: '@account-abstraction/contracts-v06', salt: ZERO_SALT, address: entryPointAddresses['0.6'] },
  '0.7': {
    packageName: '@account-abstraction/contracts-v07',
    salt: '0x90d8084deab30c2a37c45e8d47f49f2f7965183cb6990a98943ef94940681de3',
    address: entryPointAddresses['0.7'],
  },
  '0.8': {
    packageName: '@account-abstraction/contracts',
    salt: '0x0a59dbff790c23c976a548690c27297883cc66b4c67024f9117b0238995e35e9',
    address: entryPointAddresses['0.8'],
  },
}

/** Same signatures in the 0.6, 0.7 and 0.8 SimpleAccountFactory and SimpleAccount. */
export const simpleAccountFactoryAbi = parseAbi([
  'function createAccount(address owner, uint256 salt) returns (address)',
  'function getAddress(address owner, uint256 salt) view returns (address)',
  'function accountImplementation() view returns (address)',
])
export const simpleAccountAbi = parseAbi(['function execute(address dest, uint256 value, bytes func)'])

/** Runtime `PUSH1 0 PUSH1 0 REVERT`: every call to it fails, with empty revert data. */
const REVERTER_RUNTIME = '60006000fd'
/** Creation code returning REVERTER_RUNTIME: PUSH5 code, MSTORE at 0, RETURN its 5 bytes at offset 27. */
const REVERTER_CREATION: Hex = `0x64${REVERTER_RUNTIME}6000526005601bf3`

export type DeployedEntryPoint = {
  version: EntryPointVersion
  address: Address
  /** SimpleAccountFactory bound to this EntryPoint. */
  factory: Address
  accountImplementation: Address
}

export type DevnetContracts = {
  entryPoints: Record<EntryPointVersion, DeployedEntryPoint>
  /** A contract every call to which reverts: the target of reverted transactions and operations. */
  reverter: Address
}

type Artifact = { bytecode: Hex }

function readArtifact(packageName: string, contract: string): Artifact {
  const require = createRequire(import.meta.url)
  const artifact = require(`${packageName}/artifacts/${contract}.json`) as Partial<Artifact>
  if (!artifact.bytecode || !isHex(artifact.bytecode) || artifact.bytecode.length < 4) {
    throw new Error(`${packageName}/artifacts/${contract}.json has no creation bytecode`)
  }
  return artifact as Artifact
}

/** Creation code of each EntryPoint, from the artifacts of its own release. */
export function entryPointCreationCode(version: EntryPointVersion): Hex {
  return readArtifact(entryPointReleases[version].packageName, 'EntryPoint').bytecode
}

function factoryCreationCode(version: EntryPointVersion, entryPoint: Address): Hex {
  const { bytecode } = readArtifact(entryPointReleases[version].packageName, 'SimpleAccountFactory')
  return concat([bytecode, encodeAbiParameters([{ type: 'address' }], [entryPoint])])
}

function deterministicAddress(salt: Hex, creationCode: Hex): Address {
  return getContractAddress({ opcode: 'CREATE2', from: DETERMINISTIC_DEPLOYER, salt, bytecode: creationCode })
}

/** `phase` 1 must be mined before phase 2 runs: a 0.8 factory's constructor reads its EntryPoint. */
type Deployment = { name: string; phase: 1 | 2; salt: Hex; creationCode: Hex; expected: Address }

function plannedDeployments(): { deployments: Deployment[]; contracts: DevnetContracts } {
  const deployments: Deployment[] = []
  const entryPoints = {} as Record<EntryPointVersion, DeployedEntryPoint>
  for (const version of entryPointVersions) {
    const release = entryPointReleases[version]
    const creationCode = entryPointCreationCode(version)
    const expected = deterministicAddress(release.salt, creationCode)
    if (expected !== release.address) {
      throw new Error(`EntryPoint ${version} artifacts would not deploy at ${release.address} (got ${expected})`)
    }
    deployments.push({ name: `EntryPoint ${version}`, phase: 1, salt: release.salt, creationCode, expected })
    const factoryCode = factoryCreationCode(version, release.address)
    const factory = deterministicAddress(ZERO_SALT, factoryCode)
    deployments.push({ name: `SimpleAccountFactory ${version}`, phase: 2, salt: ZERO_SALT, creationCode: factoryCode, expected: factory })
    // the factory's constructor creates the implementation: its first CREATE, nonce 1
    const accountImplementation = getContractAddress({ opcode: 'CREATE', from: factory, nonce: 1n })
    entryPoints[version] = { version, address: release.address, factory, accountImplementation }
  }
  const reverter = deterministicAddress(ZERO_SALT, REVERTER_CREATION)
  deployments.push({ name: 'Reverter', phase: 1, salt: ZERO_SALT, creationCode: REVERTER_CREATION, expected: reverter })
  return { deployments, contracts: { entryPoints, reverter } }
}

/**
 * Deploys EntryPoint 0.6, 0.7 and 0.8 at their canonical addresses, a
 * SimpleAccountFactory for each and a reverting contract, all through the
 * deterministic deployer so every address is the same on every run. Already
 * deployed contracts are left alone, so calling this twice is harmless.
 */
export async function deployContracts({ client, deployer }: { client: DevnetClient; deployer: Sender }): Promise<DevnetContracts> {
  const { deployments, contracts } = plannedDeployments()
  const deployerCode = await client.getCode({ address: DETERMINISTIC_DEPLOYER })
  if (!deployerCode || deployerCode === '0x') {
    throw new Error(`no deterministic deployer at ${DETERMINISTIC_DEPLOYER} (was anvil started with --disable-default-create2-deployer?)`)
  }
  for (const phase of [1, 2] as const) {
    await deployMissing(client, deployer, deployments.filter((deployment) => deployment.phase === phase))
  }
  return contracts
}

async function isDeployed(client: DevnetClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address })
  return code !== undefined && code !== '0x'
}

/**
 * Sends every missing deployment of one phase, one at a time, each mined
 * before the next is sent, and checks that it landed. Sent together (one
 * JSON-RPC batch), one of them at times never reached a block (CI, twice:
 * the same transaction, not mined in 180 s, nor after blocks were mined
 * for it); one at a time costs a few round trips at set-up.
 */
async function deployMissing(client: DevnetClient, deployer: Sender, deployments: Deployment[]) {
  const present = await Promise.all(deployments.map((deployment) => isDeployed(client, deployment.expected)))
  const missing = deployments.filter((_, index) => !present[index])
  const gasEstimates = await Promise.all(
    missing.map((deployment) =>
      client.estimateGas({ account: deployer.address, to: DETERMINISTIC_DEPLOYER, data: concat([deployment.salt, deployment.creationCode]) }),
    ),
  )
  for (const [index, deployment] of missing.entries()) {
    const hash = await sendDevnetTransaction(client, {
      from: deployer,
      to: DETERMINISTIC_DEPLOYER,
      data: concat([deployment.salt, deployment.creationCode]),
      gas: (gasEstimates[index]! * 6n) / 5n,
    })
    const receipt = await waitForReceipt(client, hash)
    if (receipt.status !== 'success' || !(await isDeployed(client, deployment.expected))) {
      throw new Error(`deploying ${deployment.name} at ${deployment.expected} failed (transaction ${hash})`)
    }
  }
}
