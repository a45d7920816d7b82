import { describe, expect, it } from 'vitest'
import { createFinalMembers, type BatchMembers } from './final-members.js'
import type { WindowBound } from './fold.js'

const ALL: WindowBound = { name: 'senders:all', subject: 'sender', fromMs: -Infinity, untilMs: Infinity }
const SCOPES = ['{"8453":1}', '{"8453":1,"0":1}']

/** A committed batch holding one member of each table, scope sets numbered from 1. */
function batch(day: string, sender: string, { window = ALL } = {}): BatchMembers {
  return {
    scopeSets: SCOPES,
    chainSenders: { chain_id: [8453], day: [day], sender: [sender] },
    windowSenderRefs: { window_name: [window.name], sender: [sender], scope_set: [1] },
  }
}

describe('the members a process made final', () => {
  it('knows a member by its keys and the scopes it was made final in, and nothing else', () => {
    const known = createFinalMembers()
    known.add(batch('2026-01-01', '0xa'), [ALL])
    expect(known.chainSender(8453, '2026-01-01', '0xa')).toBe(true)
    expect(known.chainSender(10, '2026-01-01', '0xa')).toBe(false)
    expect(known.chainSender(8453, '2026-01-02', '0xa')).toBe(false)
    expect(known.windowSender(ALL, '0xa', SCOPES[0]!)).toBe(true)
    // the every-chain scope kept since: asked again
    expect(known.windowSender(ALL, '0xa', SCOPES[1]!)).toBe(false)
    expect(known.windowSender(ALL, '0xb', SCOPES[0]!)).toBe(false)
  })

  it('forgets a window\'s members once the window is seen with other bounds', () => {
    const day: WindowBound = { name: 'senders:24h', subject: 'sender', fromMs: 0, untilMs: Infinity }
    const known = createFinalMembers()
    known.add(batch('2026-01-01', '0xa', { window: day }), [day])
    expect(known.windowSender(day, '0xa', SCOPES[0]!)).toBe(true)
    const moved = { ...day, fromMs: 3_600_000 }
    expect(known.windowSender(moved, '0xa', SCOPES[0]!)).toBe(false)
    known.add(batch('2026-01-01', '0xb', { window: moved }), [moved])
    expect(known.windowSender(moved, '0xb', SCOPES[0]!)).toBe(true)
    expect(known.windowSender(moved, '0xa', SCOPES[0]!)).toBe(false)
  })

  it('keeps the most recent days and a bounded number of members: what it forgot is asked again, never wrongly known', () => {
    const known = createFinalMembers({ daysKept: 2, membersKept: 10 })
    for (const day of ['2026-01-03', '2026-01-01', '2026-01-02']) known.add(batch(day, '0xa'), [ALL])
    expect(known.chainSender(8453, '2026-01-01', '0xa')).toBe(false)
    expect(known.chainSender(8453, '2026-01-02', '0xa')).toBe(true)
    expect(known.chainSender(8453, '2026-01-03', '0xa')).toBe(true)
    // a late range of a day older than every kept one: not kept
    known.add(batch('2025-12-31', '0xb'), [ALL])
    expect(known.chainSender(8453, '2025-12-31', '0xb')).toBe(false)
    // past the members kept, a table forgets all at once
    for (let i = 0; i < 11; i++) known.add(batch('2026-01-03', `0x${i}`), [ALL])
    expect(known.windowSender(ALL, '0xa', SCOPES[0]!)).toBe(false)
    expect(known.chainSender(8453, '2026-01-03', '0xa')).toBe(false)
  })
})
