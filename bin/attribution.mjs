#!/usr/bin/env node
// Runs the TypeScript sources through tsx so the published command, the npm
// scripts and the tests all execute exactly the same code.
import { register } from 'tsx/esm/api'

// `decode` is a quick look at some calldata: the two libraries it needs are loaded before tsx's
// loader hooks are in place (a plain import is several times faster than one through the hooks),
// and the TypeScript that imports them finds them already loaded
if (process.argv[2] === 'decode') await Promise.all([import('ox'), import('viem')])

register()
await import('../src/bin/cli.ts')
