#!/usr/bin/env node
// An MCP client built on the TypeScript SDK v2 (@modelcontextprotocol/client,
// which speaks 2026-07-28 and answers input requests), driven line by line
// by a test, so that a test can run several clients and a browser in
// between their calls.
//
//   node interop/elicit-client-v2.mjs CONFIG_JSON
//
// The config:
//
//   { "url": "http://127.0.0.1:8080/mcp",
//     "version": "2026-07-28" | "2025-11-25",
//     "capabilities": { "elicitation": { "form": {}, "url": {} } },
//     "urlAction": "accept",      (the reply to a URL-mode elicitation)
//     "timeout": 60000 }          (each request's timeout in ms, 60000 when absent;
//                                  "default": the SDK's own, passing none)
//
// Commands on stdin, one JSON object a line, run concurrently:
//
//   { "id": 1, "tool": "connect_account", "args": {} }
//
// Lines on stdout, one JSON object each:
//
//   { "ready": true }                                    once connected
//   { "id": 1, "result": {...} } or { "id": 1, "error": { "code", "message", "data" } }
//   { "event": "elicit", "params": {...} }               an elicitation it answered
//   { "event": "complete", "elicitationId": "..." }      notifications/elicitation/complete
//
// Exits when stdin closes.

import { createInterface } from 'node:readline'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'

function out (v) { process.stdout.write(JSON.stringify(v) + '\n') }

let cfg
try {
  cfg = JSON.parse(process.argv[2] ?? '')
} catch {
  process.stderr.write('usage: node elicit-client-v2.mjs CONFIG_JSON\n')
  process.exit(2)
}

const opts = { capabilities: cfg.capabilities ?? {} }
if (cfg.version === '2026-07-28') opts.versionNegotiation = { mode: { pin: '2026-07-28' } }
const client = new Client({ name: 'elicitvault-interop-v2', version: '1.0.0' }, opts)

if (opts.capabilities.elicitation) {
  client.setRequestHandler('elicitation/create', async (req) => {
    const p = req.params
    out({ event: 'elicit', params: p })
    return { action: (p.mode === 'url' ? cfg.urlAction : 'decline') ?? 'accept' }
  })
}
client.setNotificationHandler('notifications/elicitation/complete', (n) => {
  out({ event: 'complete', elicitationId: n.params.elicitationId })
})

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(cfg.url)))
} catch (err) {
  process.stderr.write(`elicit-client-v2: connect: ${err?.stack ?? err}\n`)
  process.exit(1)
}
out({ ready: true })

// No progress handler: a request times out after its timeout, whatever
// the server reports.
const callOptions = cfg.timeout === 'default' ? {} : { timeout: cfg.timeout ?? 60000 }

const calls = []
const rl = createInterface({ input: process.stdin })
rl.on('line', (line) => {
  if (!line.trim()) return
  const cmd = JSON.parse(line)
  calls.push((async () => {
    try {
      const result = await client.callTool({ name: cmd.tool, arguments: cmd.args ?? {} }, callOptions)
      out({ id: cmd.id, result })
    } catch (err) {
      out({ id: cmd.id, error: { code: err?.code, message: String(err?.message ?? err), data: err?.data } })
    }
  })())
})
rl.on('close', async () => {
  await Promise.allSettled(calls)
  await client.close().catch(() => {})
  process.exit(0)
})
