// A real OAuth 2.1 authorization server for the tests: panva's oidc-provider (a certified OpenID
// provider), on 127.0.0.1, with the test's clients pre-registered, its own RSA key, and access
// tokens as RS256 JWTs whose audience is the resource asked for (RFC 8707).
//
//   node authorization_server.mjs CONFIG.json
//
// CONFIG: {"issuer": URL, "port": N, "scopes": [..], "clients": [oidc-provider client metadata],
//          "shortLived": [client ids whose tokens live 2 s]}
// Prints "ready" on stdout once it listens.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rsa', alg: 'RS256', use: 'sig' };
const shortLived = new Set(config.shortLived ?? []);

const provider = new Provider(config.issuer, {
  clients: config.clients,
  jwks: { keys: [key] },
  scopes: ['openid', 'offline_access', ...config.scopes],
  // the authorization code flow's login and consent, as plain HTML forms anyone may submit
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: config.scopes.join(' '),
        audience: resource,
        accessTokenTTL: shortLived.has(client.clientId) ? 2 : 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // a public client (PKCE, no secret) may ask for a code; every grant is consented to in the form
  clientDefaults: { grant_types: ['authorization_code', 'refresh_token'] },
  pkce: { required: () => true },
});
provider.proxy = false;

createServer(provider.callback()).listen(config.port, '127.0.0.1', () => {
  process.stdout.write('ready\n');
});
