import type { Application } from '../store/store.js';
import { InputError } from '../util/input-error.js';

/**
 * What the FAPI 2.0 Security Profile (Final) forbids of an application, with `AUTHCLI_FAPI2=on`: §5.3.2.1 "shall
 * only support confidential clients" and "shall authenticate clients using" mTLS or `private_key_jwt` (this server
 * has no mTLS: keys, never a secret), and §5.4 JWTs signed PS256, ES256 or EdDSA only (an RS256 ID token is
 * refused; the server signs ID tokens RS256 or ES256). Undefined when the application may be used.
 */
export function fapi2Problem(app: Pick<Application, 'kind' | 'clientKeys' | 'idTokenAlg'>): string | undefined {
  if (app.kind !== 'confidential') return 'FAPI 2.0 (AUTHCLI_FAPI2=on) allows confidential applications only';
  if (!app.clientKeys) {
    return 'FAPI 2.0 (AUTHCLI_FAPI2=on) allows private_key_jwt client authentication only, not a client secret: give the application its public keys (--jwks-uri or --jwks)';
  }
  if (app.idTokenAlg === 'RS256') {
    return 'FAPI 2.0 (AUTHCLI_FAPI2=on) allows ID tokens signed PS256, ES256 or EdDSA only, not RS256: set the ID token algorithm to ES256 (--id-token-alg ES256)';
  }
  return undefined;
}

/** What FAPI 2.0 mode refused of an application: an input error (the operator's, the dashboard's) of its own class. */
export class Fapi2Refused extends InputError {
  override name = 'Fapi2Refused';
}

/** {@link fapi2Problem} at registration and on every change, when the mode is on: a Fapi2Refused saying what to change. */
export function checkFapi2(fapi2: boolean, app: Pick<Application, 'kind' | 'clientKeys' | 'idTokenAlg'>): void {
  const problem = fapi2 ? fapi2Problem(app) : undefined;
  if (problem) throw new Fapi2Refused(problem);
}
