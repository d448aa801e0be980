import {
  AUTHORIZATION_CODE_GRANT_TYPE,
  CLIENT_CREDENTIALS_GRANT_TYPE,
  DEVICE_CODE_GRANT_TYPE,
  type DeviceAuthorizationResponse,
  REFRESH_TOKEN_GRANT_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenResponse,
} from '@authcli/protocol';
import type { ClientSettings } from '../config.js';
import { AuthcliError } from '../errors.js';
import type { HttpResponse, Transport } from '../http.js';
import type { ValidatedCallback } from './authorization.js';
import type { ServerMetadata } from './discovery.js';
import { type Grant, oauthErrorOf, ProtocolError, type ProtocolFailure } from './errors.js';
import { asDeviceAuthorization, asPushedAuthorization, asTokenResponse } from './responses.js';

/**
 * One poll of the token endpoint for a device code (RFC 8628 §3.4-3.5), classified: the tokens, keep waiting
 * (`authorization_pending`), wait 5 s longer from now on (`slow_down`, and HTTP 429), try again after a backoff
 * (no answer, or a 5xx: `transient`), or the end of the sign-in (`failed`).
 */
export type DevicePoll =
  | { kind: 'tokens'; tokens: TokenResponse }
  | { kind: 'authorization_pending' }
  | { kind: 'slow_down' }
  | { kind: 'rate_limited' }
  | { kind: 'transient'; cause: AuthcliError | HttpResponse }
  | { kind: 'failed'; error: ProtocolError };

export interface OAuthClientOptions {
  meta: ServerMetadata;
  settings: ClientSettings;
  /** How requests are sent: undici (httpTransport), or a script in tests. */
  transport: Transport;
  /** How token and revocation requests are sent: with DPoP proofs when the sign-in uses DPoP (default `transport`). */
  tokenTransport?: Transport | undefined;
}

/** The facts of one request, for its ProtocolError should it fail. */
type Sent = Pick<ProtocolFailure, 'endpoint' | 'grant' | 'url' | 'scope'>;

/**
 * The CLI as an OAuth client of one server: one method per client-authenticated request (device authorization,
 * the token endpoint's grants, PAR, revocation), each sending one request and returning its checked answer or
 * throwing a ProtocolError. The flows use nothing else to talk to the token endpoint. Discovery, the key set
 * and userinfo need no client: discovery.ts, userinfo.ts.
 */
export class OAuthClient {
  readonly meta: ServerMetadata;
  readonly settings: ClientSettings;
  readonly #transport: Transport;
  readonly #tokenTransport: Transport;

  constructor(opts: OAuthClientOptions) {
    this.meta = opts.meta;
    this.settings = opts.settings;
    this.#transport = opts.transport;
    this.#tokenTransport = opts.tokenTransport ?? opts.transport;
  }

  /**
   * Client authentication, in the one place it is done: a confidential client's id and secret in HTTP Basic
   * (RFC 6749 §2.3.1: each form-urlencoded first), a public client's id in the form (§2.3, §3.2.1).
   */
  authenticate(form: Record<string, string>): { headers: Record<string, string>; form: Record<string, string> } {
    const { clientId, clientSecret } = this.settings;
    if (!clientSecret) return { headers: {}, form: { ...form, client_id: clientId } };
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
    const basic = Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64');
    return { headers: { authorization: `Basic ${basic}` }, form };
  }

  /** RFC 8628 §3.1-3.2: the device code, the user code and where to enter it. */
  async deviceAuthorization(scope: string): Promise<DeviceAuthorizationResponse> {
    const url = this.#endpoint('device_authorization_endpoint', 'the device flow; try `authcli login --browser`');
    const req: Sent = { endpoint: 'device_authorization', url, scope };
    const res = await this.#post(req, this.#transport, this.authenticate(this.#withResource({ scope })));
    if (res.status !== 200) throw this.#refused(req, res);
    return asDeviceAuthorization(res.body, this.#malformed(req, res));
  }

  /** RFC 8628 §3.4: one token request for the device code, its answer classified (see {@link DevicePoll}). */
  async pollDeviceToken(deviceCode: string): Promise<DevicePoll> {
    const req = this.#tokenRequest('device_code');
    let res;
    try {
      const form = this.#withResource({ grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode });
      res = await this.#post(req, this.#tokenTransport, this.authenticate(form));
    } catch (err) {
      if (err instanceof AuthcliError && err.code === 'network') return { kind: 'transient', cause: err };
      throw err;
    }
    if (res.status === 429) return { kind: 'rate_limited' };
    if (res.status >= 500) return { kind: 'transient', cause: res };
    const e = oauthErrorOf(res.body);
    if (res.status !== 200 && e?.error === 'authorization_pending') return { kind: 'authorization_pending' };
    if (res.status !== 200 && e?.error === 'slow_down') return { kind: 'slow_down' };
    try {
      return { kind: 'tokens', tokens: this.#tokens(req, res) };
    } catch (err) {
      if (err instanceof ProtocolError) return { kind: 'failed', error: err };
      throw err;
    }
  }

  /** RFC 9126 §2.1-2.2: pushes every authorization parameter, with the client's authentication; the `request_uri` to send the browser with. */
  async pushAuthorizationRequest(params: Record<string, string>): Promise<string> {
    const url = this.#endpoint('pushed_authorization_request_endpoint', 'pushed authorization requests');
    const req: Sent = { endpoint: 'pushed_authorization_request', url, scope: params.scope };
    const auth = this.authenticate(this.#withResource(params));
    // client_id stays in the form with Basic too: RFC 9126 §2.1 sends every authorization parameter.
    const res = await this.#post(req, this.#transport, {
      headers: auth.headers,
      form: { client_id: this.settings.clientId, ...auth.form },
    });
    if (res.status !== 201 && res.status !== 200) throw this.#refused(req, res);
    return asPushedAuthorization(res.body, this.#malformed(req, res)).request_uri;
  }

  /** The URL the browser is sent to: the authorization endpoint with `query` (all parameters, or client_id and a request_uri). */
  authorizationUrl(query: Record<string, string>): URL {
    const url = new URL(this.#endpoint('authorization_endpoint', 'the browser sign-in; try `authcli login`'));
    for (const [k, v] of Object.entries(query.request_uri ? query : this.#withResource(query))) url.searchParams.set(k, v);
    return url;
  }

  /** RFC 6749 §4.1.3 + RFC 7636 §4.5: only a validated callback can be exchanged, with the verifier of its request. */
  async exchangeCode(callback: ValidatedCallback, redirectUri: string, verifier: string): Promise<TokenResponse> {
    const req = this.#tokenRequest('authorization_code');
    const form = this.#withResource({
      grant_type: AUTHORIZATION_CODE_GRANT_TYPE,
      code: callback.code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    return this.#tokens(req, await this.#post(req, this.#tokenTransport, this.authenticate(form)));
  }

  /** RFC 6749 §6: new tokens for a refresh token. */
  async refresh(refreshToken: string): Promise<TokenResponse> {
    const req = this.#tokenRequest('refresh_token');
    const form = this.#withResource({ grant_type: REFRESH_TOKEN_GRANT_TYPE, refresh_token: refreshToken });
    return this.#tokens(req, await this.#post(req, this.#tokenTransport, this.authenticate(form)));
  }

  /** RFC 6749 §4.4: the application's own token (it authenticates with its secret); `scope` left out: the server's default. */
  async clientCredentials(scope: string | undefined): Promise<TokenResponse> {
    const req = { ...this.#tokenRequest('client_credentials'), ...(scope !== undefined && { scope }) };
    const form = this.#withResource({ grant_type: CLIENT_CREDENTIALS_GRANT_TYPE, ...(scope !== undefined && { scope }) });
    return this.#tokens(req, await this.#post(req, this.#tokenTransport, this.authenticate(form)));
  }

  /** RFC 8693 §2.1: a CI job's OIDC token for the application's access token (the client names itself, no secret). */
  async tokenExchange(subjectToken: string, scope: string | undefined): Promise<TokenResponse> {
    const req = { ...this.#tokenRequest('token_exchange'), ...(scope !== undefined && { scope }) };
    const form = this.#withResource({
      grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
      subject_token: subjectToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      ...(scope !== undefined && { scope }),
    });
    return this.#tokens(req, await this.#post(req, this.#tokenTransport, this.authenticate(form)));
  }

  /** RFC 7009 §2.1: revokes a token; 'unsupported' when the server publishes no revocation endpoint. */
  async revoke(token: string, hint: 'refresh_token' | 'access_token'): Promise<'revoked' | 'unsupported'> {
    const url = this.meta.revocation_endpoint;
    if (!url) return 'unsupported';
    const req: Sent = { endpoint: 'revocation', url };
    const res = await this.#post(req, this.#tokenTransport, this.authenticate({ token, token_type_hint: hint }));
    // §2.2: 200 whether or not the token was valid; any 2xx is taken as done.
    if (res.status < 200 || res.status >= 300) throw this.#refused(req, res);
    return 'revoked';
  }

  /** RFC 8707 §2: the API the tokens are for, when the settings name one. */
  #withResource(form: Record<string, string>): Record<string, string> {
    const { resource } = this.settings;
    return resource === undefined ? form : { ...form, resource };
  }

  #tokenRequest(grant: Grant): Sent {
    return { endpoint: 'token', grant, url: this.meta.token_endpoint };
  }

  /** An endpoint the metadata must name for this request; a discovery error saying which is missing. */
  #endpoint(name: keyof ServerMetadata, what: string): string {
    const url = this.meta[name];
    if (typeof url === 'string') return url;
    throw new ProtocolError({ endpoint: 'discovery', problem: `${this.settings.issuer} does not offer ${what}` }, this.settings);
  }

  #post(req: Sent, transport: Transport, auth: { headers: Record<string, string>; form: Record<string, string> }) {
    return transport(req.url!, { method: 'POST', headers: auth.headers, form: auth.form });
  }

  /** The token response of a 200, or the refusal. */
  #tokens(req: Sent, res: HttpResponse): TokenResponse {
    if (res.status !== 200) throw this.#refused(req, res);
    return asTokenResponse(res.body, this.#malformed(req, res));
  }

  #refused(req: Sent, res: HttpResponse): ProtocolError {
    return new ProtocolError({ ...req, status: res.status, ...oauthErrorOf(res.body) }, this.settings);
  }

  #malformed(req: Sent, res: HttpResponse): (problem: string) => never {
    return (problem) => {
      throw new ProtocolError({ ...req, status: res.status, problem }, this.settings);
    };
  }
}
