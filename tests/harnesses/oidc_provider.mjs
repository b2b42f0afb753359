// A real OpenID provider for the sign-on tests: the certified `oidc-provider` on
// 127.0.0.1, configured from one JSON argument (tests/helpers/identity_provider.py):
//   {port, clients: [...], accounts: {id: {name, email, groups}}, audience}
// Its own login and consent pages (devInteractions) take any password for a known
// account. Access tokens asked for with `resource` are JWTs for that audience, scoped
// `agent person`; the client `short-lived` gets ones that end after one second.
// It prints `ready` once it listens, and exits when its stdin closes (the test ended).
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const settings = JSON.parse(process.argv[2]);
const issuer = `http://127.0.0.1:${settings.port}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: settings.clients,
  jwks: { keys: [signing] },
  cookies: { keys: ['a test provider cookie key'] },
  claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'email', 'groups'],
  conformIdTokenClaims: false, // the groups go in the ID token, as many providers do
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => false,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: 'agent person',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: client.clientId === 'short-lived' ? 1 : 600,
      }),
    },
  },
  async findAccount(ctx, id) {
    const account = settings.accounts[id];
    if (!account) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...account }) };
  },
});
provider.listen(settings.port, '127.0.0.1', () => process.stdout.write('ready\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
