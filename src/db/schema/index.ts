export * from './registry.js'
export * from './indexer.js'
export * from './notifications.js'
