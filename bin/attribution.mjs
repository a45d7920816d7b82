#!/usr/bin/env node
// Runs the TypeScript sources through tsx so the published command, the npm
// scripts and the tests all execute exactly the same code.
import { register } from 'tsx/esm/api'

register()
await import('../src/bin/cli.ts')
