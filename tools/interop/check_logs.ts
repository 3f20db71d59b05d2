// dsh-py's interop check, run by `nox -s interop` with the TypeScript harness's own `tsx`
// from a copy placed under the harness checkout's scripts/ directory (so the workspace
// packages resolve through its tsconfig paths). Our own code: it drives the harness's
// JSONL backend and session store as a third-party program would.
//
// Usage: tsx check_logs.ts MANIFEST RESULTS
//
// For each log the manifest names (written by tools/interop/make_logs.py):
//   load    the harness lists it, loads it, and takes its raw events as a seed
//           (Session.create), which refuses messages without identity;
//   derive  the messages the harness derives have the roles and contents dsh-py derived;
//   resume  the harness opens it for writing, appends one turn (a user message and an
//           assistant answer, no model call) and flushes it.
// RESULTS gets, per log, what passed and the two message ids appended (readback.py checks
// dsh-py reads them back).
import { readFileSync, writeFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { Context } from '@deepseek-ai/cordis'
import SessionStore, { Session, SessionId, decodeStorageRecord } from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'

interface Entry {
  name: string
  root?: string
  compression?: 'none' | 'zstd'
  id?: string
  derived?: { role: string, content: unknown }[]
  error?: string
}

interface Outcome {
  name: string
  id?: string
  load: boolean
  derive: boolean
  resume: boolean
  problems: string[]
  appended?: { user: string, assistant: string, turn: number }
}

/** JSON with object keys sorted, so two encodings of the same value compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    const keys = Object.keys(record).filter(key => record[key] !== undefined).sort()
    return `{${keys.map(key => `${JSON.stringify(key)}:${canonical(record[key])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

async function check(entry: Entry): Promise<Outcome> {
  const outcome: Outcome = { name: entry.name, id: entry.id, load: false, derive: false, resume: false, problems: [] }
  if (entry.id === undefined || entry.root === undefined) {
    outcome.problems.push(`dsh-py did not write it: ${entry.error ?? 'no id'}`)
    return outcome
  }
  const id = SessionId(entry.id)
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlSessionPersistence, { root: entry.root, compression: entry.compression ?? 'none' })
  const persistence = ctx.sessionPersistence
  try {
    // load: listed, loaded, and a seed of its raw events (no compatibility path)
    try {
      const listed = (await persistence.list()).map(header => header.id)
      if (!listed.includes(id)) throw new Error('list() leaves it out')
      const inspection = await persistence.load(id)
      const raw = await persistence.readRaw(id)
      if (raw === undefined) throw new Error('readRaw() found nothing')
      const lines = raw.content.split('\n').filter(line => line !== '')
      const events = lines.slice(1).flatMap(line => decodeStorageRecord(JSON.parse(line)))
      if (events.length !== inspection.events.length) {
        throw new Error(`raw log has ${events.length} events, load() gave ${inspection.events.length}`)
      }
      Session.create(SessionId(`seed-of-${entry.id}`), events)
      outcome.load = true
    } catch (error: unknown) {
      outcome.problems.push(`load: ${describe(error)}`)
      return outcome
    }
    // derive, then resume on the same prepared session
    const preparation = await persistence.prepare(id)
    try {
      const session = preparation.session
      try {
        const theirs = session.deriveMessages().map(message => ({ role: message.role, content: message.content }))
        const ours = entry.derived ?? []
        if (theirs.length !== ours.length) {
          throw new Error(`${theirs.length} messages, dsh-py derived ${ours.length}`)
        }
        theirs.forEach((message, index) => {
          if (canonical(message) !== canonical(ours[index])) {
            throw new Error(`message ${index} differs: ${canonical(message).slice(0, 300)} vs ${canonical(ours[index]).slice(0, 300)}`)
          }
        })
        outcome.derive = true
      } catch (error: unknown) {
        outcome.problems.push(`derive: ${describe(error)}`)
      }
      try {
        const detach = ctx.sessions.enter(session)
        try {
          ctx.sessions.announce(session)
          let turn = 0
          for (const event of session.events) {
            if (event.type === 'turn/start') turn = Math.max(turn, (event.data as { turn: number }).turn)
          }
          turn += 1
          const user = randomUUID()
          const assistant = randomUUID()
          session.append('turn/start', { turn })
          session.append('step/start', { turn, step: 1 })
          session.append('user/message', {
            content: [{ type: 'text', text: 'interop: a turn appended by the TypeScript harness' }],
            source: { kind: 'user' },
            role: 'user',
            id: user,
          } as never, { surfaceOp: 'append' })
          session.append('assistant/message', {
            turn,
            step: 1,
            message: {
              role: 'assistant',
              content: [{ type: 'text', text: 'interop: answered without a model' }],
              source: { kind: 'model', provider: 'interop', model: 'none' },
              id: assistant,
            },
          } as never, { surfaceOp: 'append', sourceEventSeqs: [] })
          session.append('step/end', { turn, step: 1 })
          session.append('turn/end', { turn, reason: { kind: 'completed' } })
          if (!await ctx.sessions.flush(session)) throw new Error('no persistence flushed the session')
          outcome.appended = { user, assistant, turn }
          outcome.resume = true
        } finally {
          detach()
        }
      } catch (error: unknown) {
        outcome.problems.push(`resume: ${describe(error)}`)
      }
    } finally {
      preparation[Symbol.dispose]()
    }
  } finally {
    await ctx.fiber.dispose()
  }
  return outcome
}

async function main(): Promise<void> {
  const [manifestPath, resultsPath] = process.argv.slice(2)
  if (manifestPath === undefined || resultsPath === undefined) {
    throw new Error('usage: tsx check_logs.ts MANIFEST RESULTS')
  }
  const entries = JSON.parse(readFileSync(manifestPath, 'utf8')) as Entry[]
  const outcomes: Outcome[] = []
  for (const entry of entries) {
    const outcome = await check(entry)
    outcomes.push(outcome)
    const marks = (['load', 'derive', 'resume'] as const).map(step => `${step} ${outcome[step] ? 'ok' : 'FAILED'}`)
    console.log(`${entry.name} ${entry.id ?? ''}: ${marks.join(', ')}`)
    for (const problem of outcome.problems) console.log(`    ${problem}`)
  }
  writeFileSync(resultsPath, JSON.stringify(outcomes, null, 1))
}

await main()
