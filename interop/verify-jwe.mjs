#!/usr/bin/env node
// Verifies an elicitvault JWE token independently of the Go code: the keys
// are derived here from the key schedule as SECURITY.md and token/README.md
// document it, and the JWE is decrypted by the `jose` package with the
// algorithms pinned to dir / A256GCM.
//
//   MCP_ELICITATION_SECRET=… [MCP_ELICITATION_SECRET_PREVIOUS=…,…] \
//     node interop/verify-jwe.mjs [--kind K] TOKEN
//
// Prints the claims as JSON on stdout. Exit 1 with "invalid", "expired" or
// "unknown key" on stderr for a rejected token, 2 for a usage error.

import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { compactDecrypt, decodeProtectedHeader } from 'jose'

const SALT = 'elicitvault/v1'
const LABEL = 'elicitvault/v1 '
const KINDS = ['url', 'oauth-state', 'request-state']

// HKDF (RFC 5869) written out with HMAC-SHA256, as the key schedule states
// it: prk = HKDF-Extract(salt, secret); okm = HKDF-Expand(prk, info, n).
function hkdfExtract (secret) {
  return createHmac('sha256', SALT).update(secret).digest()
}

function hkdfExpand (prk, info, length) {
  const blocks = []
  let prev = Buffer.alloc(0)
  for (let i = 1; Buffer.concat(blocks).length < length; i++) {
    prev = createHmac('sha256', prk).update(Buffer.concat([prev, Buffer.from(info, 'utf8'), Buffer.from([i])])).digest()
    blocks.push(prev)
  }
  return Buffer.concat(blocks).subarray(0, length)
}

// derive returns the key ID (hex) and the JWE key of one secret, computed
// both by hand and with Node's hkdfSync, which must agree.
function derive (secret) {
  const ikm = Buffer.from(secret, 'utf8')
  if (ikm.length < 32) fail(2, 'a secret is shorter than 32 bytes')
  const prk = hkdfExtract(ikm)
  const kid = hkdfExpand(prk, LABEL + 'key-id', 4)
  const key = hkdfExpand(prk, LABEL + 'token/jwe', 32)
  const kid2 = Buffer.from(hkdfSync('sha256', ikm, SALT, LABEL + 'key-id', 4))
  const key2 = Buffer.from(hkdfSync('sha256', ikm, SALT, LABEL + 'token/jwe', 32))
  if (!timingSafeEqual(kid, kid2) || !timingSafeEqual(key, key2)) {
    throw new Error('HKDF by hand and hkdfSync disagree')
  }
  return { kid: kid.toString('hex'), key: new Uint8Array(key) }
}

function fail (code, msg) {
  process.stderr.write(`verify-jwe: ${msg}\n`)
  process.exit(code)
}

async function main () {
  const args = process.argv.slice(2)
  let kind = null
  if (args[0] === '--kind') {
    kind = args[1]
    args.splice(0, 2)
    if (!KINDS.includes(kind)) fail(2, '--kind must be url, oauth-state or request-state')
  }
  if (args.length !== 1) fail(2, 'usage: verify-jwe.mjs [--kind K] TOKEN')
  const token = args[0].trim()

  const primary = process.env.MCP_ELICITATION_SECRET
  if (!primary) fail(2, 'MCP_ELICITATION_SECRET is not set')
  const previous = (process.env.MCP_ELICITATION_SECRET_PREVIOUS || '').split(',').filter(s => s !== '')
  const keys = new Map([primary, ...previous].map(s => derive(s)).map(k => [k.kid, k.key]))

  // The protected header must be exactly {alg: dir, enc: A256GCM, kid}.
  let header
  try {
    header = decodeProtectedHeader(token)
  } catch {
    fail(1, 'invalid')
  }
  const members = Object.keys(header).sort().join(',')
  if (members !== 'alg,enc,kid' || header.alg !== 'dir' || header.enc !== 'A256GCM' || token.split('.').length !== 5 || token.split('.')[1] !== '') {
    fail(1, 'invalid')
  }
  const key = keys.get(header.kid)
  if (!key) fail(1, 'unknown key')

  let plaintext
  try {
    ({ plaintext } = await compactDecrypt(token, key, {
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM']
    }))
  } catch {
    fail(1, 'invalid')
  }
  let claims
  try {
    claims = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(plaintext))
  } catch {
    fail(1, 'invalid')
  }
  for (const m of ['exp', 'iat']) if (!Number.isInteger(claims[m])) fail(1, 'invalid')
  for (const m of ['jti', 'sid', 'eid', 'knd']) if (typeof claims[m] !== 'string' || claims[m] === '') fail(1, 'invalid')
  if (!KINDS.includes(claims.knd) || (kind !== null && claims.knd !== kind)) fail(1, 'invalid')
  if (Math.floor(Date.now() / 1000) >= claims.exp) fail(1, 'expired')

  process.stdout.write(JSON.stringify({ kid: header.kid, ...claims }) + '\n')
}

main().catch(err => fail(1, `error: ${err.message}`))
