import { describe, expect, it } from 'vitest'
import { classifyError, classifyHttp, limitIn } from './failure-kinds.js'
import { httpAnswer } from '../wire/http-post.js'

const answer = (status: number, text = '', retryAfterMs?: number) => httpAnswer(status, Buffer.from(text), retryAfterMs, 1)

describe('the limit shapes real nodes answer with', () => {
  it('reads the limit a node names', () => {
    expect(limitIn('batch limit 10 exceeded: 50 requests given')).toBe(10) // Erigon
    expect(limitIn('Number of requests in batch exceeds limit of 50')).toBe(50) // Besu
    expect(limitIn('batch size 50 exceeds the maximum of 10')).toBe(10)
    expect(limitIn('batch too large')).toBeUndefined()
  })

  it('classifies JSON-RPC error objects', () => {
    expect(classifyError({ code: -32000, message: 'batch limit 10 exceeded: 50 requests given' }, true)).toBe('batch_limit')
    expect(classifyError({ code: -32602, message: 'Number of requests in batch exceeds limit of 50' }, false)).toBe('batch_limit')
    expect(classifyError({ code: -32600, message: 'batch requests are not supported' }, true)).toBe('batch_limit')
    expect(classifyError({ code: -32003, message: 'response too large' }, false)).toBe('response_too_large')
    expect(classifyError({ code: 429, message: 'Too Many Requests' }, false)).toBe('rate_limited')
    expect(classifyError({ code: -32005, message: 'limit exceeded' }, false)).toBe('item_error')
    // any lone error object answering a batch refuses the batch as such
    expect(classifyError({ code: -32600, message: 'invalid request' }, true)).toBe('batch_limit')
  })

  it('classifies HTTP answers', () => {
    expect(classifyHttp(answer(429, '', 1000), 10)).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1000 })
    expect(classifyHttp(answer(413, 'Request Entity Too Large'), 10).kind).toBe('batch_limit')
    expect(classifyHttp(answer(413, 'Request Entity Too Large'), 1).kind).toBe('response_too_large')
    expect(classifyHttp(answer(400, 'batch size 50 exceeds the maximum of 10'), 50).kind).toBe('batch_limit')
    expect(classifyHttp(answer(400, 'bad request'), 50).kind).toBe('http_error')
    expect(classifyHttp(answer(503, '<html>'), 50).kind).toBe('http_error')
  })
})
