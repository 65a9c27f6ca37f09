// A real OpenID Provider for the OAuth tests of elicit/oauth:
// node-oidc-provider (OpenID Certified), with its development
// login/consent pages, started by the Go tests on a free loopback port.
//
// Usage: node oidc-provider.mjs
// Environment:
//   OIDC_CLIENTS  JSON array of client metadata (client_id, client_secret,
//                 redirect_uris, ...)
//   OIDC_ACCESS_TTL  access token lifetime in seconds (default 3600)
//
// It prints "issuer <url>" once it listens, then one JSON line per grant
// event ({"event":"grant.success","grant_type":"refresh_token"}, ...), which
// the tests count. It never prints a token.
import http from 'node:http';
import Provider from 'oidc-provider';

const clients = JSON.parse(process.env.OIDC_CLIENTS || '[]');
const accessTTL = Number(process.env.OIDC_ACCESS_TTL || 3600);

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients,
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
    },
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access'],
    ttl: { AccessToken: accessTTL, AuthorizationCode: 60, RefreshToken: 86400, Interaction: 600, Session: 3600, Grant: 86400 },
    rotateRefreshToken: true,
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    async findAccount(ctx, id) {
      return { accountId: id, async claims() { return { sub: id }; } };
    },
    cookies: { keys: ['elicitvault interop test only'] },
  });
  for (const ev of ['grant.success', 'grant.error', 'grant.revoked']) {
    provider.on(ev, (ctx, err) => {
      const line = { event: ev, grant_type: ctx?.oidc?.params?.grant_type };
      if (err) line.error = err.error;
      process.stdout.write(JSON.stringify(line) + '\n');
    });
  }
  provider.on('server_error', (ctx, err) => process.stderr.write(`server_error ${err}\n`));
  server.on('request', provider.callback());
  process.stdout.write(`issuer ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
