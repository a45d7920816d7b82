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

  it('tells the large mark on the rows ranges expect from their blocks, before any range holds its rows', async () => {
    let told = 0
    const rows = createRowsInFlight(100, 10, { rows: 20, reached: () => told++ })
    const [first, second] = [await rows.enter(), await rows.enter()]
    first.expect(12)
    expect([rows.held, told]).toEqual([22, 0])
    second.expect(9)
    expect([rows.held, told]).toEqual([21, 1])
    // their rows, once known, stay past the mark: not told again
    first.hold(12)
    second.hold(9)
    expect([rows.held, told]).toEqual([21, 1])
  })

  it('replaces an expected count by the rows the range holds, and the average by held rows alone', async () => {
    let told = 0
    const rows = createRowsInFlight(30, 10, { rows: 20, reached: () => told++ })
    const first = await rows.enter()
    first.expect(25)
    expect([rows.held, told]).toEqual([25, 1])
    // fewer rows than its candidates said: the count falls under the mark, and is told again once past it
    first.hold(15)
    expect(rows.held).toBe(15)
    const second = await rows.enter()
    // entered at the average of the rows held (15), not of the expected 25
    expect(rows.held).toBe(30)
    second.expect(4)
    expect([rows.held, told]).toEqual([19, 1])
    second.expect(6)
    expect([rows.held, told]).toEqual([21, 2])
    // a range that holds its rows is past expecting
    first.expect(1)
    expect(rows.held).toBe(21)
  })

  it('lets a range that only expected rows leave with its count, and lets the waiting in on an expectation below the estimate', async () => {
    let told = 0
    const rows = createRowsInFlight(10, 10, { rows: 8, reached: () => told++ })
    const first = await rows.enter()
    let secondIn = false
    const second = rows.enter().then((ticket) => ((secondIn = true), ticket))
    await Promise.resolve()
    expect(secondIn).toBe(false)
    first.expect(7)
    await Promise.resolve()
    await Promise.resolve()
    expect([secondIn, rows.held, told]).toEqual([true, 17, 0])
    // its blocks failed the branch check, or it was split: it leaves before any rows
    first.leave()
    first.hold(7)
    expect(rows.held).toBe(10)
    // its expected rows left the large count too: 2 more are under the mark, 8 reach it
    ;(await second).expect(2)
    expect([rows.held, told]).toEqual([2, 0])
    ;(await second).expect(8)
    expect([rows.held, told]).toEqual([8, 1])
  })
})
