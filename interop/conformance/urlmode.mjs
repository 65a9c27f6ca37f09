#!/usr/bin/env node
// A URL-mode elicitation conformance scenario, in the style of the MCP
// conformance suite (which has none): run it against any MCP server's
// Streamable HTTP URL that has a tool asking for a URL-mode elicitation.
//
//   node urlmode.mjs --url http://127.0.0.1:8080/mcp [--tool connect_account]
//        [--args '{"...":...}'] [--pii alice@example.com ...]
//        [--protocol 2025-11-25|2026-07-28|both]
//
// The page the link leads to is completed as a browser without scripts
// would: the scenario fetches it and submits its first form whose button
// says accept (or decline), from the page's own origin. Checks, on each
// protocol generation:
//
//   link-scheme        the link is https, or http to a loopback host
//   link-no-pii        the link carries none of the --pii strings, nor the
//                      session ID, as written, percent-decoded or base64-decoded
//   waits-for-page     the call does not complete before the page is
//                      submitted (after the client accepted the elicitation)
//   completes-after-page
//                      2025-11-25: notifications/elicitation/complete for
//                      the elicitation ID, then the tool's result;
//                      2026-07-28: the retried round (inputResponses and
//                      requestState) completes; a round that answers
//                      input_required again ("still waiting") is retried
//   decline-reported   Decline on the page ends the call with a result that
//                      differs from the accepted one (2025-11-25: after a
//                      completion notification)
//   reused-link-refused
//                      submitting a used page again is refused (HTTP 4xx)
//
// It prints one line per check and "N passed, N failed" last; it exits 1
// when a check failed.
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string', default: 'connect_account' },
    args: { type: 'string', default: '{}' },
    pii: { type: 'string', multiple: true, default: [] },
    protocol: { type: 'string', default: 'both' },
    timeout: { type: 'string', default: '60' },
  },
});
if (!opt.url) {
  console.error('usage: urlmode.mjs --url URL [--tool NAME] [--args JSON] [--pii STRING...] [--protocol VERSION|both]');
  process.exit(2);
}
const toolArgs = JSON.parse(opt.args);
const timeoutMs = Number(opt.timeout) * 1000;
const clientInfo = { name: 'elicitvault-urlmode-scenario', version: '1' };

const results = [];
function check(protocol, id, ok, message) {
  results.push({ protocol, id, ok });
  console.log(`${ok ? 'SUCCESS' : 'FAILURE'} ${protocol} ${id}${message ? ': ' + message : ''}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function withTimeout(p, ms, what) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`timed out waiting for ${what}`)), ms); })])
    .finally(() => clearTimeout(t));
}
// settledWithin reports whether p settles within ms, without consuming it.
async function settledWithin(p, ms) {
  let settled = false;
  p.then(() => { settled = true; }, () => { settled = true; });
  await sleep(ms);
  return settled;
}

// --- SSE over fetch ---------------------------------------------------------

// events yields the JSON-RPC messages of a response: one JSON body, or the
// data of each SSE event.
async function* events(res) {
  const type = res.headers.get('content-type') || '';
  if (!type.includes('text/event-stream')) {
    const text = await res.text();
    if (text.trim()) yield JSON.parse(text);
    return;
  }
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data) yield JSON.parse(data);
    }
  }
}

// --- the link and the page --------------------------------------------------

function checkScheme(protocol, link) {
  let u;
  try { u = new URL(link); } catch { check(protocol, 'link-scheme', false, 'not an absolute URL'); return; }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) || /^127\./.test(u.hostname);
  check(protocol, 'link-scheme', u.protocol === 'https:' || (u.protocol === 'http:' && loopback),
    `${u.protocol}//${u.hostname}`);
}

// decodings returns the link and what its parts decode to.
function decodings(link) {
  const out = [link];
  try { out.push(decodeURIComponent(link)); } catch { /* not percent-encoded */ }
  for (const part of link.split(/[/?&=#.~]/)) {
    if (part.length < 8) continue;
    for (const enc of ['base64url', 'base64']) {
      const b = Buffer.from(part, enc);
      if (b.length) out.push(b.toString('latin1'));
    }
  }
  return out;
}

function checkNoPII(protocol, link, secrets) {
  const found = secrets.filter((s) => s && decodings(link).some((d) => d.includes(s)));
  check(protocol, 'link-no-pii', found.length === 0, found.length ? `the link carries ${found.length} of the user's strings` : '');
}

// submitPage completes the page at link with the form button whose value
// or name is choice, as a browser on the page's own origin would.
async function submitPage(link, choice) {
  const page = await fetch(link, { redirect: 'follow', headers: { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' } });
  const html = await page.text();
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = m[1];
    if (!/method\s*=\s*["']?post/i.test(attrs)) continue;
    const buttons = [...m[2].matchAll(/<button\b([^>]*)>/gi)].map((b) => ({
      name: (b[1].match(/\bname\s*=\s*["']([^"']*)["']/i) || [])[1],
      value: (b[1].match(/\bvalue\s*=\s*["']([^"']*)["']/i) || [])[1],
    }));
    const button = buttons.find((b) => new RegExp(choice, 'i').test(b.value || '') || new RegExp(choice, 'i').test(b.name || ''));
    if (!button) continue;
    const form = new URLSearchParams();
    for (const h of m[2].matchAll(/<input\b([^>]*type\s*=\s*["']?hidden[^>]*)>/gi)) {
      const name = (h[1].match(/\bname\s*=\s*["']([^"']*)["']/i) || [])[1];
      const value = (h[1].match(/\bvalue\s*=\s*["']([^"']*)["']/i) || [])[1] || '';
      if (name) form.append(name, value.replaceAll('&amp;', '&'));
    }
    if (button.name) form.append(button.name, button.value || '');
    const action = ((attrs.match(/\baction\s*=\s*["']([^"']*)["']/i) || [])[1] || '').replaceAll('&amp;', '&');
    const target = new URL(action, page.url);
    const res = await fetch(target, {
      method: 'POST', redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: new URL(page.url).origin,
        'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate',
      },
      body: form.toString(),
    });
    await res.text();
    return { status: res.status, resubmit: () => fetch(target, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(page.url).origin, 'sec-fetch-site': 'same-origin' },
      body: form.toString(),
    }) };
  }
  throw new Error(`the page has no form with a ${choice} button (HTTP ${page.status})`);
}

function resultText(result) {
  return JSON.stringify((result && (result.content || result.structuredContent)) || result);
}

// --- 2026-07-28 -------------------------------------------------------------

const V2026 = '2026-07-28';
const meta2026 = {
  'io.modelcontextprotocol/protocolVersion': V2026,
  'io.modelcontextprotocol/clientInfo': clientInfo,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
};

async function call2026(params) {
  const res = await fetch(opt.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': params.name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: Math.floor(Math.random() * 1e9), method: 'tools/call', params: { ...params, _meta: meta2026 } }),
  });
  for await (const m of events(res)) {
    if (m.error) throw new Error(`tools/call: JSON-RPC error ${m.error.code}`);
    if (m.result) return m.result;
  }
  throw new Error(`tools/call: HTTP ${res.status} without a result`);
}

// urlRequest returns the key and params of the URL-mode input request of r.
function urlRequest(r) {
  for (const [key, ir] of Object.entries(r.inputRequests || {})) {
    const p = ir.params || ir;
    if (p.mode === 'url') return { key, params: p };
  }
  return null;
}

// retryUntilComplete sends the answer with the state, and again with each
// new state while the server says it is still waiting.
async function retryUntilComplete(key, state, answer) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call2026({ name: opt.tool, arguments: toolArgs, inputResponses: { [key]: answer }, requestState: state });
    if (r.resultType !== 'input_required') return r;
    const again = urlRequest(r);
    if (!r.requestState || Date.now() > deadline) throw new Error('still waiting past the timeout');
    if (again) key = again.key;
    state = r.requestState;
    await sleep(200);
  }
}

async function round2026(choice) {
  const first = await call2026({ name: opt.tool, arguments: toolArgs });
  const ask = urlRequest(first);
  if (first.resultType !== 'input_required' || !ask || !first.requestState) {
    throw new Error(`the tool did not ask for a URL-mode elicitation (resultType ${first.resultType})`);
  }
  const retried = retryUntilComplete(ask.key, first.requestState, { action: 'accept' });
  retried.catch(() => {});
  const early = await settledWithin(retried, 1000);
  const page = await submitPage(ask.params.url, choice);
  const result = await withTimeout(retried, timeoutMs, 'the retried round');
  return { link: ask.params.url, early, page, result };
}

const gen2026 = {
  p: V2026,
  round: round2026,
  pii: () => opt.pii,
  early: 'the retried round completed before the page was submitted',
  accepted: (r) => [r.page.status < 400, `page HTTP ${r.page.status}`],
  declined: () => [true, ''],
};

// --- 2025-11-25 -------------------------------------------------------------

const V2025 = '2025-11-25';

// session2025 is a stateful Streamable HTTP session.
async function session2025() {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(opt.url, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: V2025, capabilities: { elicitation: { url: {} } }, clientInfo } }),
  });
  const sid = init.headers.get('mcp-session-id');
  for await (const m of events(init)) if (m.error) throw new Error(`initialize: JSON-RPC error ${m.error.code}`);
  const h = { ...headers, 'mcp-protocol-version': V2025, ...(sid ? { 'mcp-session-id': sid } : {}) };
  const post = (msg) => fetch(opt.url, { method: 'POST', headers: h, body: JSON.stringify(msg) });
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
  // The standalone stream, where a notification outside a request's
  // stream may arrive.
  const inbox = [];
  let wake = () => {};
  const ctl = new AbortController();
  fetch(opt.url, { method: 'GET', headers: { ...h, accept: 'text/event-stream' }, signal: ctl.signal })
    .then(async (res) => { for await (const m of events(res)) { inbox.push(m); wake(); } })
    .catch(() => {});
  return { sid, post, inbox, onMessage: (f) => { wake = f; }, close: async () => {
    ctl.abort();
    if (sid) await fetch(opt.url, { method: 'DELETE', headers: h }).catch(() => {});
  } };
}

async function round2025(choice) {
  const s = await session2025();
  try {
    const res = await s.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: opt.tool, arguments: toolArgs } });
    const seen = [];
    let ask;
    let done;
    const completed = new Promise((resolve, reject) => { done = { resolve, reject }; });
    let completeAt = 0;
    let resultAt = 0;
    const onMsg = (m) => {
      seen.push(m);
      if (m.method === 'elicitation/create' && m.params?.mode === 'url') {
        ask = m;
        s.post({ jsonrpc: '2.0', id: m.id, result: { action: 'accept' } }).then((r) => r.text()).catch(done.reject);
      }
      if (m.method === 'notifications/elicitation/complete' && !completeAt) completeAt = Date.now();
      if (m.id === 1 && (m.result || m.error)) {
        resultAt = Date.now();
        done.resolve(m);
      }
    };
    (async () => { for await (const m of events(res)) onMsg(m); })().catch(done.reject);
    s.onMessage(() => { while (s.inbox.length) onMsg(s.inbox.shift()); });
    const deadline = Date.now() + timeoutMs;
    while (!ask && Date.now() < deadline) await sleep(50);
    if (!ask) throw new Error('the tool did not ask for a URL-mode elicitation');
    const early = await settledWithin(completed, 1000);
    const submitted = Date.now();
    const page = await submitPage(ask.params.url, choice);
    const final = await withTimeout(completed, timeoutMs, 'the tool result');
    // A notification sent just before the result may still be in flight on
    // the other stream.
    for (let i = 0; i < 20 && !completeAt; i++) await sleep(50);
    const idOK = seen.some((m) => m.method === 'notifications/elicitation/complete' && m.params?.elicitationId === ask.params.elicitationId);
    return { link: ask.params.url, sid: s.sid, early, page, result: final.result, error: final.error,
      completeAfterPage: completeAt >= submitted && idOK, resultAt };
  } finally {
    await s.close();
  }
}

const gen2025 = {
  p: V2025,
  round: round2025,
  pii: (r) => [...opt.pii, r.sid],
  early: 'the call completed before the page was submitted',
  accepted: (r) => [r.completeAfterPage, r.completeAfterPage ? '' : 'no notifications/elicitation/complete for the elicitation after the page'],
  declined: (r) => [r.completeAfterPage, r.completeAfterPage ? '' : 'no notifications/elicitation/complete after Decline'],
};

// run runs the checks of one protocol generation: g.round(choice) is an
// elicitation answered choice on its page; g.pii(r) the strings r's link
// must not carry; g.early what a completion before the page means;
// g.accepted(r) and g.declined(r) whether r completed after the page, and
// if not why ([ok, message]).
async function run(g) {
  const p = g.p;
  let accepted;
  try {
    accepted = await g.round('accept');
    checkScheme(p, accepted.link);
    checkNoPII(p, accepted.link, g.pii(accepted));
    check(p, 'waits-for-page', !accepted.early, accepted.early ? g.early : '');
    const [done, why] = g.accepted(accepted);
    check(p, 'completes-after-page', done && accepted.result && !accepted.result.isError, why);
    const again = await accepted.page.resubmit();
    await again.text();
    check(p, 'reused-link-refused', again.status >= 400, `HTTP ${again.status}`);
  } catch (e) {
    check(p, 'completes-after-page', false, e.message);
    return;
  }
  try {
    const declined = await g.round('decline');
    const [done, why] = g.declined(declined);
    check(p, 'decline-reported', done && resultText(declined.result) !== resultText(accepted.result), why);
  } catch (e) {
    check(p, 'decline-reported', false, e.message);
  }
}

if (opt.protocol === 'both' || opt.protocol === V2025) await run(gen2025);
if (opt.protocol === 'both' || opt.protocol === V2026) await run(gen2026);
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
