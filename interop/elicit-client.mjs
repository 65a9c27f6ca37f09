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
//     "sdk": "v1" | "v2",      (v1, the default: @modelcontextprotocol/sdk;
//                               v2: @modelcontextprotocol/client, the TypeScript SDK v2)
//     "version": "2026-07-28" | "2025-11-25",   (v2: the protocol version it pins)
//     "transport": "http" | "stdio",
//     "url": "http://127.0.0.1:8080/mcp",                  (http)
//     "command": "/path/to/elicitvault", "args": ["serve", "--stdio"],   (stdio)
//     "capabilities": { "elicitation": { "form": {}, "url": {} } },
//     "steps": [
//       { "tool": "delete_contacts", "args": {},
//         "answers": [ { "action": "accept", "content": { "confirm": true } } ] },
//       { "tool": "connect_account", "answers": [ { "action": "accept", "visit": true } ] },
//       { "tool": "connect_account", "args": { "url_required_error": true }, "onURLRequired": "visit-and-retry" },
//       { "tool": "subscribe_newsletter", "relay": { "action": "accept", "content": { "confirm": true } } }
//     ]
//   }
//
// Each step calls one tool; its elicitations are answered in order from its
// answers (an elicitation with no answer left is cancelled). An answer with
// "visit" opens the URL of a URL-mode elicitation as a browser would, after
// replying: it loads the consent page and submits its form. A step with
// "onURLRequired": "visit-and-retry" handles the error -32042: it opens the
// URL of every elicitation the error carries, waits for their
// notifications/elicitation/complete, and calls the tool again. A step
// with "relay" plays the model of a client that cannot elicit: the tool's
// result names an elicitation in _meta.elicitationPending, and the step
// calls sendElicitationResult with its ID and the relay's action and
// content (its result is the step's second).
//
// Prints one JSON object on stdout: for each step the elicitations it saw
// (mode, message, requestedSchema, elicitationId, whether a URL came), the
// tool results or JSON-RPC errors, the HTTP statuses of its visits and the
// completion notifications. Exit 0 when every step ran, whatever the
// results; 1 when the client itself failed; 2 for a bad plan.

// sdk loads the pieces of the SDK the plan names, behind one shape.
async function sdk (which) {
  if (which === 'v2') {
    const c = await import('@modelcontextprotocol/client')
    const s = await import('@modelcontextprotocol/client/stdio')
    return {
      Client: c.Client,
      StreamableHTTPClientTransport: c.StreamableHTTPClientTransport,
      StdioClientTransport: s.StdioClientTransport,
      elicitRequest: 'elicitation/create',
      completeNotification: 'notifications/elicitation/complete',
      isProtocolError: (err) => err instanceof c.ProtocolError,
      callTool: (client, params, timeout) => client.callTool(params, { timeout })
    }
  }
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js')
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
  const t = await import('@modelcontextprotocol/sdk/types.js')
  return {
    Client,
    StreamableHTTPClientTransport,
    StdioClientTransport,
    elicitRequest: t.ElicitRequestSchema,
    completeNotification: t.ElicitationCompleteNotificationSchema,
    isProtocolError: (err) => err instanceof t.McpError,
    callTool: (client, params, timeout) => client.callTool(params, undefined, { timeout })
  }
}

// The JSON-RPC error that asks for URL-mode elicitations first.
const URL_ELICITATION_REQUIRED = -32042

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
if (![undefined, 'v1', 'v2'].includes(plan.sdk)) fail(2, 'the plan\'s sdk must be "v1" or "v2"')
const S = await sdk(plan.sdk)

// completions: elicitation ID → resolved when its notification arrives.
const completed = []
const waiters = new Map()
function completion (id) {
  if (completed.includes(id)) return Promise.resolve()
  return new Promise(resolve => waiters.set(id, resolve))
}

const clientOptions = { capabilities: plan.capabilities ?? { elicitation: { form: {}, url: {} } } }
// v2 negotiates 2025-era versions by default (mode 'legacy'); a 2026 one is pinned.
if (plan.sdk === 'v2' && plan.version >= '2026') clientOptions.versionNegotiation = { mode: { pin: plan.version } }
const client = new S.Client({ name: 'elicitvault-interop', version: '1.0.0' }, clientOptions)

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

// A client without the elicitation capability has no handler (the SDK v2
// would declare the capability for one).
if (clientOptions.capabilities.elicitation) client.setRequestHandler(S.elicitRequest, async (req) => {
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

client.setNotificationHandler(S.completeNotification, (n) => {
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
    const res = await S.callTool(client, { name: step.tool, arguments: step.args ?? {} }, STEP_TIMEOUT_MS)
    record.results.push({ result: res })
    return null
  } catch (err) {
    if (!S.isProtocolError(err)) throw err
    record.results.push({ error: { code: err.code, message: err.message, data: err.data } })
    return err
  }
}

let transport
switch (plan.transport) {
  case 'http':
    transport = new S.StreamableHTTPClientTransport(new URL(plan.url))
    break
  case 'stdio':
    transport = new S.StdioClientTransport({
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
    const pending = record.results[0]?.result?._meta?.elicitationPending
    if (step.relay && pending?.elicitId) {
      const args = { elicitId: pending.elicitId, action: step.relay.action }
      if (step.relay.content !== undefined) args.content = step.relay.content
      await withTimeout(call({ tool: 'sendElicitationResult', args }, record), 'sendElicitationResult')
    }
    if (err && err.code === URL_ELICITATION_REQUIRED && step.onURLRequired === 'visit-and-retry') {
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
