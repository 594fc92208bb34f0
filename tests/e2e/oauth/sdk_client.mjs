// The official MCP TypeScript SDK's own OAuth flow against a navigator, headless.
//
//   node sdk_client.mjs NAVIGATOR_URL LOGIN
//
// It is given the navigator's URL and nothing of the authorization server: the SDK finds it from
// the navigator's 401 (RFC 9728 metadata, then the server's RFC 8414 metadata), registers itself
// (dynamic client registration), and sends the person to the authorization URL. The person's
// part — oidc-provider's login and consent forms — is done here by submitting those forms as a
// browser would, carrying the cookies they set. The SDK then exchanges the code (PKCE, with the
// navigator's resource indicator) and lists the tools. Prints one JSON line: the tools' names,
// and every URL fetched, in order.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [navigator, login] = process.argv.slice(2);
const redirectUrl = 'http://127.0.0.1:9/callback'; // never listened on: the code is read from it
const fetched = [];
const recording = (input, init) => {
  fetched.push(String(input instanceof Request ? input.url : input));
  return fetch(input, init);
};

class MemoryProvider {
  constructor() {
    this.held = {};
    this.authorizationUrl = undefined;
  }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return {
      client_name: 'meshnav test client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.held.client; }
  saveClientInformation(client) { this.held.client = client; }
  tokens() { return this.held.tokens; }
  saveTokens(tokens) { this.held.tokens = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier) { this.held.verifier = verifier; }
  codeVerifier() { return this.held.verifier; }
}

// The person at the authorization server: oidc-provider's development login and consent forms.
async function signIn(authorizationUrl) {
  const cookies = new Map();
  let url = authorizationUrl.toString();
  let body;
  for (let step = 0; step < 20; step += 1) {
    const answer = await recording(url, {
      method: body ? 'POST' : 'GET',
      body,
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      redirect: 'manual',
    });
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    body = undefined;
    const location = answer.headers.get('location');
    if (location) {
      const next = new URL(location, url);
      if (next.toString().startsWith(redirectUrl)) {
        const code = next.searchParams.get('code');
        if (!code) throw new Error(`the authorization server answered ${next.search}`);
        return code;
      }
      url = next.toString();
      continue;
    }
    const page = await answer.text();
    const form = page.match(/<form[^>]*action="([^"]+)"/);
    if (!form) throw new Error(`no form at step ${step} (${answer.status})`);
    const fields = new URLSearchParams();
    for (const input of page.matchAll(/<input[^>]*>/g)) {
      const name = input[0].match(/name="([^"]+)"/)?.[1];
      const value = input[0].match(/value="([^"]*)"/)?.[1] ?? '';
      if (name) fields.set(name, value);
    }
    if (fields.has('login')) fields.set('login', login);
    if (fields.has('password')) fields.set('password', 'any');
    url = new URL(form[1], url).toString();
    body = fields.toString();
  }
  throw new Error('the authorization server never redirected back');
}

const provider = new MemoryProvider();
const endpoint = new URL('/mcp', navigator);
let transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider, fetch: recording });
let client = new Client({ name: 'meshnav-oauth-test', version: '1.0.0' });
try {
  await client.connect(transport);
  throw new Error('the navigator let an unauthenticated client in');
} catch (error) {
  if (!(error instanceof UnauthorizedError) || !provider.authorizationUrl) throw error;
}
const code = await signIn(provider.authorizationUrl);
await transport.finishAuth(code);
transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider, fetch: recording });
client = new Client({ name: 'meshnav-oauth-test', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
await client.close();
process.stdout.write(`${JSON.stringify({ tools: tools.map((t) => t.name), fetched })}\n`);
