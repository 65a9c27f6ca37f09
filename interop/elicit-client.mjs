#!/usr/bin/env node
// An MCP client built on the TypeScript SDK (@modelcontextprotocol/sdk) that
// calls tools of an elicitvault server and answers its elicitations from a
// scripted plan, for the interop tests of the integration module.
//
//   node interop/elicit-client.mjs PLAN_JSON      (or the plan in $ELICIT_PLAN)
//
// The plan:
//
//   {
//     "transport": "http" | "stdio",
//     "url": "http://127.0.0.1:8080/mcp",                  (http)
//     "command": "/path/to/elicitvault", "args": ["serve", "--stdio"],   (stdio)
//     "capabilities": { "elicitation": { "form": {}, "url": {} } },
//     "steps": [
//       { "tool": "delete_contacts", "args": {},
//         "answers": [ { "action": "accept", "content": { "confirm": true } } ] },
//       { "tool": "connect_account", "answers": [ { "action": "accept", "visit": true } ] },
//       { "tool": "connect_account", "args": { "url_required_error": true }, "onURLRequired": "visit-and-retry" }
//     ]
//   }
//
// Each step calls one tool; its elicitations are answered in order from its
// answers (an elicitation with no answer left is cancelled). An answer with
// "visit" opens the URL of a URL-mode elicitation as a browser would, after
// replying: it loads the consent page and submits its form. A step with
// "onURLRequired": "visit-and-retry" handles the error -32042: it opens the
// URL of every elicitation the error carries, waits for their
// notifications/elicitation/complete, and calls the tool again.
//
// Prints one JSON object on stdout: for each step the elicitations it saw
// (mode, message, requestedSchema, elicitationId, whether a URL came), the
// tool results or JSON-RPC errors, the HTTP statuses of its visits and the
// completion notifications. Exit 0 when every step ran, whatever the
// results; 1 when the client itself failed; 2 for a bad plan.

import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  ErrorCode,
  McpError
} from '@modelcontextprotocol/sdk/types.js'

const STEP_TIMEOUT_MS = 20000

function fail (code, msg) {
  process.stderr.write(`elicit-client: ${msg}\n`)
  process.exit(code)
}

let plan
try {
  plan = JSON.parse(process.argv[2] ?? process.env.ELICIT_PLAN ?? '')
} catch {
  fail(2, 'usage: node elicit-client.mjs PLAN_JSON (or $ELICIT_PLAN)')
}
if (!Array.isArray(plan.steps)) fail(2, 'the plan has no steps')

// completions: elicitation ID → resolved when its notification arrives.
const completed = []
const waiters = new Map()
function completion (id) {
  if (completed.includes(id)) return Promise.resolve()
  return new Promise(resolve => waiters.set(id, resolve))
}

const client = new Client(
  { name: 'elicitvault-interop', version: '1.0.0' },
  { capabilities: plan.capabilities ?? { elicitation: { form: {}, url: {} } } }
)

let current // the step being run
const pendingVisits = []

// visit opens the consent page of a URL-mode elicitation and submits its
// form, as the user's browser would. It records the two statuses.
async function visit (url, record) {
  const page = await fetch(url, { redirect: 'manual' })
  const html = await page.text()
  const v = { page: page.status }
  record.visits.push(v)
  const m = /<form method="post" action="([^"]+)"/.exec(html)
  if (page.status !== 200 || !m) return
  const action = new URL(m[1].replaceAll('&amp;', '&'), url)
  const done = await fetch(action, { method: 'POST', redirect: 'manual' })
  await done.text()
  v.callback = done.status
}

client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const p = req.params
  const record = current
  record.elicitations.push({
    mode: p.mode ?? 'form',
    message: p.message,
    requestedSchema: p.requestedSchema,
    elicitationId: p.elicitationId,
    hasURL: typeof p.url === 'string' && p.url !== ''
  })
  const answer = record.answers.shift() ?? { action: 'cancel' }
  if (answer.visit && p.url) {
    // Reply first, then open the page: a browser tab opens after the
    // user agreed.
    pendingVisits.push(new Promise(resolve => setTimeout(resolve, 20)).then(() => visit(p.url, record)))
  }
  const res = { action: answer.action }
  if (answer.content !== undefined) res.content = answer.content
  return res
})

client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
  const id = n.params.elicitationId
  completed.push(id)
  waiters.get(id)?.()
  waiters.delete(id)
})

function withTimeout (promise, what) {
  let timer
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), STEP_TIMEOUT_MS)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

async function call (step, record) {
  try {
    const res = await client.callTool({ name: step.tool, arguments: step.args ?? {} }, undefined, { timeout: STEP_TIMEOUT_MS })
    record.results.push({ result: res })
    return null
  } catch (err) {
    if (!(err instanceof McpError)) throw err
    record.results.push({ error: { code: err.code, message: err.message, data: err.data } })
    return err
  }
}

let transport
switch (plan.transport) {
  case 'http':
    transport = new StreamableHTTPClientTransport(new URL(plan.url))
    break
  case 'stdio':
    transport = new StdioClientTransport({
      command: plan.command,
      args: plan.args ?? [],
      env: { ...process.env, ...(plan.env ?? {}) },
      stderr: 'inherit'
    })
    break
  default:
    fail(2, 'the plan\'s transport must be "http" or "stdio"')
}

const out = { steps: [] }
try {
  await client.connect(transport)
  for (const step of plan.steps) {
    const record = current = {
      tool: step.tool,
      answers: [...(step.answers ?? [])],
      elicitations: [],
      results: [],
      visits: [],
      completed: []
    }
    const before = completed.length
    const err = await withTimeout(call(step, record), step.tool)
    if (err && err.code === ErrorCode.UrlElicitationRequired && step.onURLRequired === 'visit-and-retry') {
      const elicitations = err.data?.elicitations ?? []
      const done = elicitations.map(e => completion(e.elicitationId))
      for (const e of elicitations) await visit(e.url, record)
      await withTimeout(Promise.all(done), 'notifications/elicitation/complete')
      await withTimeout(call(step, record), step.tool + ' (retry)')
    }
    await withTimeout(Promise.all(pendingVisits.splice(0)), 'visits')
    record.completed = completed.slice(before)
    delete record.answers
    out.steps.push(record)
  }
} catch (err) {
  process.stderr.write(`elicit-client: ${err?.stack ?? err}\n`)
  process.stdout.write(JSON.stringify(out) + '\n')
  await client.close().catch(() => {})
  process.exit(1)
}
process.stdout.write(JSON.stringify(out) + '\n')
await client.close().catch(() => {})
process.exit(0)
