#!/usr/bin/env node
// An MCP server built on the TypeScript SDK (@modelcontextprotocol/sdk),
// over stdio, whose tools ask the client for input, for the interop tests
// of elicit/client (the Go client's elicitation handler):
//
//   node interop/elicit-server.mjs
//
// Tools (each returns, as text, the JSON of the client's answer, or
// "error: MESSAGE" as a tool error when the elicitation failed):
//
//   profile   a form: name (string, 1 to 40 characters), email (format
//             email), age (integer 0 to 150), color (titled enum, default
//             "blue"), pets (multi-select); name and email required
//   login     a form that asks for a password
//   open      URL mode for the link in the argument "url"

import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const profileSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', minLength: 1, maxLength: 40 },
    email: { type: 'string', title: 'Email', format: 'email' },
    age: { type: 'integer', title: 'Age', minimum: 0, maximum: 150 },
    color: {
      type: 'string', title: 'Favourite colour', default: 'blue',
      oneOf: [{ const: 'red', title: 'Red' }, { const: 'blue', title: 'Blue' }],
    },
    pets: { type: 'array', title: 'Pets', items: { type: 'string', enum: ['cat', 'dog', 'fish'] }, maxItems: 2 },
  },
  required: ['name', 'email'],
}

const loginSchema = {
  type: 'object',
  properties: {
    user: { type: 'string', title: 'User' },
    password: { type: 'string', title: 'Password' },
  },
  required: ['user', 'password'],
}

const server = new Server({ name: 'ts-elicit-server', version: '1.0.0' }, { capabilities: { tools: {} } })

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: 'profile', inputSchema: { type: 'object' } },
    { name: 'login', inputSchema: { type: 'object' } },
    { name: 'open', inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] } },
  ],
}))

let next = 0

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments ?? {}
  let params
  switch (req.params.name) {
    case 'profile':
      params = { mode: 'form', message: 'Tell us about you', requestedSchema: profileSchema }
      break
    case 'login':
      params = { mode: 'form', message: 'Log in to Example', requestedSchema: loginSchema }
      break
    case 'open':
      params = { mode: 'url', message: 'Connect your account', url: String(args.url), elicitationId: `ts-${++next}` }
      break
    default:
      return { isError: true, content: [{ type: 'text', text: `unknown tool ${req.params.name}` }] }
  }
  try {
    const res = await server.elicitInput(params)
    return { content: [{ type: 'text', text: JSON.stringify(res) }] }
  } catch (err) {
    return { isError: true, content: [{ type: 'text', text: `error: ${err.message}` }] }
  }
})

await server.connect(new StdioServerTransport())
