import proxyAddr from '@fastify/proxy-addr'
import { normalizeIP } from '@fastify/rate-limit'

/**
 * Who a client is, for every per-client limit of the API: one rule, so a
 * client cannot be one client for one limit and many for another.
 *
 * - The address is the socket's, or the one a trusted proxy forwarded
 *   (`TRUST_PROXY`); `X-Forwarded-For` from anyone else is ignored.
 * - IPv6 clients are counted per /64, the block one subscriber holds:
 *   rotating addresses inside it gains nothing. IPv4-mapped IPv6 addresses
 *   are their IPv4 address.
 */
export function clientKey(ip: string): string {
  return normalizeIP(ip, 64)
}

/** Whether the peer at `address` (`hop` 0: the socket) is a proxy whose forwarded addresses are believed. */
export type TrustProxy = (address: string, hop: number) => boolean

/**
 * TRUST_PROXY as one function, handed to Fastify (which computes
 * `request.ip` with it) and used by the connection cap (which exempts a
 * trusted proxy's socket: its clients are counted by their forwarded
 * address instead). Same meaning as Fastify's own parsing:
 *
 * - unset: trust nobody, the client is the socket address;
 * - `true`: trust every hop;
 * - a hop count: trusted by no one here — Fastify 5 refuses hop-count trust
 *   for the socket's peer (a direct client could claim enough hops), and this
 *   function does the same rather than disagree with it;
 * - proxy IPs or CIDRs, comma-separated.
 */
export function trustProxyFunction(value: string | undefined): TrustProxy {
  if (!value) return () => false
  if (value === 'true') return () => true
  if (/^\d+$/.test(value)) return () => false
  return proxyAddr.compile(value.split(',').map((part) => part.trim()))
}
