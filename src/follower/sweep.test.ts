import { describe, expect, it } from 'vitest'
import { sortFailedJobs } from './sweep.js'

const job = (id: string | undefined, chainId: number | undefined) => ({ id, data: chainId === undefined ? undefined : { chainId } })

describe('sortFailedJobs', () => {
  it('retries the chain’s failed jobs whose range is pending and removes its others', () => {
    const failed = [job('1-0-9-aa', 1), job('1-10-19-bb', 1), job('1-20-29-cc', 1), job('1-30-39-dd', 1)]
    expect(sortFailedJobs(failed, new Set(['1-10-19-bb', '1-30-39-dd', '1-40-49-ee']), 1)).toEqual({
      retry: [failed[1], failed[3]],
      remove: [failed[0], failed[2]],
    })
  })

  it('leaves other chains’ jobs, and jobs without data, alone', () => {
    const failed = [job('2-0-9-aa', 2), job('1-0-9-aa', 1), job('x', undefined)]
    expect(sortFailedJobs(failed, new Set(['2-0-9-aa', '1-0-9-aa']), 1)).toEqual({ retry: [failed[1]], remove: [] })
    expect(sortFailedJobs(failed, new Set(), 2)).toEqual({ retry: [], remove: [failed[0]] })
  })

  it('removes a job without an id', () => {
    const failed = [job(undefined, 1)]
    expect(sortFailedJobs(failed, new Set(['1-0-9-aa']), 1)).toEqual({ retry: [], remove: [failed[0]] })
  })

  it('does nothing with no failed jobs', () => {
    expect(sortFailedJobs([], new Set(['1-0-9-aa']), 1)).toEqual({ retry: [], remove: [] })
  })
})
