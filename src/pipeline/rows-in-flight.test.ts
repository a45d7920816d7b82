import { describe, expect, it } from 'vitest'
import { createRowsInFlight } from './rows-in-flight.js'

describe('rows in flight', () => {
  it('lets ranges in while the rows held are under the bound, the rest once commits end', async () => {
    const rows = createRowsInFlight(10)
    const first = await rows.enter()
    first.hold(6)
    const second = await rows.enter()
    second.hold(6)
    expect(rows.held).toBe(12)
    let thirdIn = false
    const third = rows.enter().then((ticket) => ((thirdIn = true), ticket))
    await Promise.resolve()
    expect([thirdIn, rows.waiting]).toEqual([false, 1])
    first.leave()
    expect(rows.waiting).toBe(0)
    // it entered counted at what ranges held on average (6), before it has its own rows
    expect(rows.held).toBe(12)
    ;(await third).hold(2)
    expect(rows.held).toBe(8)
  })

  it('counts each range waiting as it is let in, so one commit ending does not let every waiting range in at once', async () => {
    const rows = createRowsInFlight(10)
    const held = await rows.enter()
    held.hold(10)
    const entered: number[] = []
    const waiting = [1, 2, 3].map((n) => rows.enter().then((ticket) => (entered.push(n), ticket)))
    held.leave()
    await Promise.resolve()
    await Promise.resolve()
    // each waiting range counts the average (10): the first fills the room again
    expect(entered).toEqual([1])
    ;(await waiting[0]!).leave()
    await Promise.resolve()
    await Promise.resolve()
    expect(entered).toEqual([1, 2])
  })

  it('counts ranges in at the first estimate until one has its rows', async () => {
    const rows = createRowsInFlight(10, 4)
    const [first, second, third] = [await rows.enter(), await rows.enter(), await rows.enter()]
    expect(rows.held).toBe(12)
    let fourthIn = false
    const fourth = rows.enter().then((ticket) => ((fourthIn = true), ticket))
    await Promise.resolve()
    expect(fourthIn).toBe(false)
    // a sparse range: the estimate falls to what ranges hold, and the room opens
    first.hold(1)
    second.hold(1)
    third.hold(1)
    ;(await fourth).hold(1)
    expect(rows.held).toBe(4)
  })

  it('lets a range leave once, however often it is told', async () => {
    const rows = createRowsInFlight(10)
    const ticket = await rows.enter()
    ticket.hold(4)
    ticket.leave()
    ticket.leave()
    ticket.hold(4)
    expect(rows.held).toBe(0)
  })

  it('tells when the rows ranges fetched pass the large mark, leaving out the estimates of ranges still fetching', async () => {
    let told = 0
    const rows = createRowsInFlight(100, 10, { rows: 20, reached: () => told++ })
    const [first, second, third] = [await rows.enter(), await rows.enter(), await rows.enter()]
    // three ranges entered at the first estimate (30 held): none has its rows yet
    expect([rows.held, told]).toEqual([30, 0])
    first.hold(12)
    expect(told).toBe(0)
    second.hold(8)
    expect(told).toBe(1)
    third.hold(5)
    expect(told).toBe(1)
    // under the mark once a range's commit ends, past it again with the next: told again
    first.leave()
    expect(told).toBe(1)
    ;(await rows.enter()).hold(9)
    expect(told).toBe(2)
  })
})
