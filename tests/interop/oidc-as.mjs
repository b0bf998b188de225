// A real OAuth 2.1 / OpenID authorization server on loopback for orchestra's auth interop tests:
// oidc-provider 9.13.3 (pinned in package.json; Node 20 works with an "Unsupported runtime" warning),
// adapted from /work/shared/reference/team-auth-oidc-as.mjs. Not a test file: node --test does not
// pick up this name. auth_as.mjs starts it; by hand: `AS_PORT=0 node tests/interop/oidc-as.mjs`.
//
// - AS_PORT (default 0: a free port). Once listening it prints `AS ready http://127.0.0.1:PORT` on
//   stdout; that URL is the issuer. Metadata at /.well-known/oauth-authorization-server and
//   /.well-known/openid-configuration, keys at /jwks, tokens at /token, RFC 7662 at
//   /token/introspection.
// - Resource indicators (RFC 8707), any port:
//     http://127.0.0.1:<port>/mcp  → RFC 9068 JWT access tokens (header typ at+jwt, RS256, the kid
//                                    below; aud = that resource; 300 s);
//     http://localhost:<port>/mcp  → opaque access tokens, only checkable by introspection (the
//                                    same server seen under another name, for the introspection
//                                    tests); aud = that resource in the introspection answer.
//   Anything else is `invalid_target`.
// - A new RSA key with a random `kid` on every start: restarting on the same port is a key rotation
//   (tokens signed before no longer match any published key). Tokens and grants live in memory
//   only, so opaque tokens do not survive a restart either.
// - client_credentials clients (client_secret_basic), secret `<id>-secret`:
//     reader    orchestra:read
//     searcher  orchestra:read orchestra:search
//     writer    every scope below, per-prefix ones included
//     features  orchestra:read:features orchestra:search
//   and the resource server's introspection client orchestra-rs / rs-secret (no grants).
// - Test only: `POST /test/mint` with JSON `{header, claims}` answers `{token}`: the claims signed
//   with the CURRENT private key (jose SignJWT; `kid` and `alg: RS256` filled in unless the header
//   sets them), so a test can make an expired, not-yet-valid, wrong-audience or wrong-issuer token
//   whose signature is genuine. `GET /test/key` answers the current public JWK.
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

const SCOPES = [
  'orchestra:read',
  'orchestra:search',
  'orchestra:write',
  'orchestra:admin',
  'orchestra:read:features',
  'orchestra:read:notes',
  'orchestra:read:docs/adr',
  'orchestra:write:notes',
  'orchestra:write:features',
];
const JWT_RESOURCE = /^http:\/\/127\.0\.0\.1:\d{1,5}\/mcp$/;
const OPAQUE_RESOURCE = /^http:\/\/localhost:\d{1,5}\/mcp$/;

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
});

const KID = `k-${crypto.randomUUID()}`;
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' };
const { d, p, q, dp, dq, qi, ...publicJwk } = jwk;

// The port must be known before the provider (its issuer names it): listen first, then route.
const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(Number(process.env.AS_PORT ?? 0), '127.0.0.1', resolve);
});
const ISSUER = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(ISSUER, {
  jwks: { keys: [jwk] },
  scopes: SCOPES,
  clients: [
    { client_id: 'orchestra-rs', client_secret: 'rs-secret', grant_types: [], redirect_uris: [], response_types: [] },
    client('reader', 'orchestra:read'),
    client('searcher', 'orchestra:read orchestra:search'),
    client('writer', SCOPES.join(' ')),
    client('features', 'orchestra:read:features orchestra:search'),
  ],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => {
        if (OPAQUE_RESOURCE.test(resourceIndicator)) {
          return { scope: SCOPES.join(' '), audience: resourceIndicator, accessTokenTTL: 300, accessTokenFormat: 'opaque' };
        }
        if (!JWT_RESOURCE.test(resourceIndicator)) throw new errors.InvalidTarget();
        return {
          scope: SCOPES.join(' '),
          audience: resourceIndicator,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});

/** POST /test/mint: `{header, claims}` signed with the current key. */
async function mint(req, res) {
  let body = '';
  for await (const chunk of req) body += chunk;
  try {
    const { header = {}, claims = {} } = JSON.parse(body || '{}');
    const token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: KID, ...header }).sign(privateKey);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token }));
  } catch (e) {
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(e) }));
  }
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.method === 'POST' && req.url === '/test/mint') return void mint(req, res);
  if (req.method === 'GET' && req.url === '/test/key') {
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(publicJwk));
  }
  return callback(req, res);
});
// Quiet: a refused request is an expected outcome in these tests, not news.
provider.on('server_error', (ctx, error) => console.error(`AS server_error: ${error}`));

// Stopped by a signal: the process goes, its listening socket and connections with it.
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
console.log(`AS ready ${ISSUER}`);
