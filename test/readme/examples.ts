/**
 * Reads the shell examples out of README.md (and the docs/ pages it links)
 * and says whether what a command printed is what its `# →` comment shows.
 * The examples are documentation first: this reads the conventions they are
 * written in rather than asking them to carry test markup.
 *
 * - A fenced ```sh block is an example; an HTML comment `<!-- not run: why -->`
 *   on the line before it marks one that cannot run against the devnet (a
 *   real chain, Docker), and says why.
 * - A step is one command (its continuation lines included); the `# → …`
 *   line after it, with its indented `#    …` continuation lines, is what
 *   it prints, `…` standing for text left out.
 */

export type Step = {
  /** The command lines, as written. */
  command: string
  /** The `# →` text (continuations joined), if the example shows an answer. */
  expected: string | undefined
  /** Line number in the file of the step's first line, for failure messages. */
  line: number
}

export type Example = { file: string; line: number; steps: Step[]; text: string }

const FENCE = /^```(\w*)\s*$/
const NOT_RUN = /^<!--\s*not run:\s*(.+?)\s*-->\s*$/
const ANSWER = /^#\s*→\s?(.*)$/
const CONTINUATION = /^#\s{2,}(.*)$/

/** The ```sh blocks of a markdown file, each split into steps; blocks marked `not run` are left out. */
export function examplesOf(markdown: string, file: string): Example[] {
  const lines = markdown.split('\n')
  const examples: Example[] = []
  for (let index = 0; index < lines.length; index++) {
    const fence = FENCE.exec(lines[index]!)
    if (!fence || fence[1] === '') continue
    const start = index
    let end = index + 1
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++
    const body = lines.slice(start + 1, end)
    const notRun = NOT_RUN.test(lines[start - 1] ?? '')
    if (fence[1] === 'sh' && !notRun) examples.push({ file, line: start + 2, steps: stepsOf(body, start + 2), text: body.join('\n') })
    index = end
  }
  return examples
}

function stepsOf(body: string[], firstLine: number): Step[] {
  const steps: Step[] = []
  let current: { lines: string[]; line: number } | undefined
  let answer: string[] | undefined
  const close = () => {
    if (current) steps.push({ command: current.lines.join('\n'), expected: answer?.join(''), line: current.line })
    current = undefined
    answer = undefined
  }
  body.forEach((text, offset) => {
    const arrow = ANSWER.exec(text)
    if (arrow && current) {
      answer = [...(answer ?? []), arrow[1]!]
      return
    }
    const continued = CONTINUATION.exec(text)
    if (continued && answer) {
      answer.push(continued[1]!)
      return
    }
    if (text.trim() === '' || text.trimStart().startsWith('#')) {
      close()
      return
    }
    // a command after a command's answer starts the next step
    if (answer) close()
    current ??= { lines: [], line: firstLine + offset }
    current.lines.push(text)
    // one command per step: a line that completes a command (no open quote, `$(` or trailing `\`) ends it,
    // unless its answer follows
    if (isComplete(current.lines.join('\n')) && !ANSWER.test(body[offset + 1] ?? '')) close()
  })
  close()
  return steps
}

/**
 * Whether shell text is a whole command: no quote left open, every `$(`
 * and `(` closed, no trailing backslash. Words after an unquoted `#` are a
 * comment. Enough for the README's commands, not a shell parser.
 */
export function isComplete(text: string): boolean {
  let quote: '"' | "'" | undefined
  let depth = 0
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    if (quote === "'") {
      if (char === "'") quote = undefined
      continue
    }
    if (char === '\\') {
      if (index === text.length - 1) return false
      index++
      continue
    }
    if (char === '#' && !quote && (index === 0 || /\s/.test(text[index - 1]!))) {
      const newline = text.indexOf('\n', index)
      if (newline < 0) break
      index = newline
      continue
    }
    if (char === '"') quote = quote ? undefined : '"'
    else if (char === "'" && !quote) quote = "'"
    else if (char === '(') depth++
    else if (char === ')') depth--
  }
  return quote === undefined && depth <= 0
}

/**
 * Counts a request decides, compared exactly; every other number grows with
 * the devnet's traffic (block numbers, totals) and is compared as a number.
 */
const EXACT_NUMBERS = new Set(['chainId', 'sentCount', 'failedCount'])

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

const PAIR = /"(\w+)":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)?/g

/**
 * What `printed` lacks of `expected`: every key the answer shows, and each
 * value as written — strings and booleans exactly, `"pre…suf"` by its two
 * ends, `"…"` as any string, numbers as numbers (the few in EXACT_NUMBERS
 * exactly). An error body nobody showed is a failure too. Empty: it matches.
 */
export function mismatches(expected: string | undefined, printed: string): string[] {
  const problems: string[] = []
  if (!/"error"\s*:/.test(expected ?? '') && /"error"\s*:\s*\{/.test(printed)) problems.push('answered an error body the example does not show')
  if (expected === undefined) return problems
  for (const [, key, value] of expected.matchAll(PAIR)) {
    const pattern = valuePattern(key!, value)
    if (!new RegExp(`"${escape(key!)}"\\s*:\\s*${pattern}`).test(printed)) problems.push(value === undefined ? `no "${key}"` : `no "${key}":${value}`)
  }
  return problems
}

function valuePattern(key: string, value: string | undefined): string {
  if (value === undefined) return ''
  if (value.startsWith('"')) {
    const text = JSON.parse(value) as string
    if (text === '…') return '"(?:[^"\\\\]|\\\\.)*"'
    return `"${text.split('…').map(escape).join('(?:[^"\\\\]|\\\\.)*')}"`
  }
  if (/^-?\d/.test(value) && !EXACT_NUMBERS.has(key)) return '-?\\d'
  return `${escape(value)}(?![\\w.])`
}
