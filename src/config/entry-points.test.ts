import { entryPoint06Address, entryPoint07Address, entryPoint08Address } from 'viem/account-abstraction'
import { expect, it } from 'vitest'
import { defaultEntryPoints } from './chains.js'

// chains.ts writes the addresses out so reading the configuration loads none of viem: they must stay viem's
it('the default EntryPoints are viem’s 0.6, 0.7 and 0.8 addresses', () => {
  expect(defaultEntryPoints).toEqual([entryPoint06Address, entryPoint07Address, entryPoint08Address])
})
