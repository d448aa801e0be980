/** How the consent, device and account pages name an application and the scopes it asks for. */
import { scopesByResource } from '../oauth/resources.js';
import type { ResourceCatalog } from '../store/store.js';
import { SCOPE_DESCRIPTIONS } from './scope-text.js';

/**
 * The scopes a request asks for: OpenID Connect's with what they release, then each API's (RFC 8707 resources)
 * under the API's name and identifier, with the descriptions its operator gave them.
 */
export function ScopeList(props: { scopes: readonly string[]; apis?: ResourceCatalog | undefined }) {
  const { apis, other } = props.apis ? scopesByResource(props.scopes, props.apis) : { apis: [], other: props.scopes };
  return (
    <>
      {other.length > 0 && (
        <ul class="scopes">
          {other.map((s) => (
            <li>
              <code>{s}</code> <span class="muted">{SCOPE_DESCRIPTIONS[s] ?? ''}</span>
            </li>
          ))}
        </ul>
      )}
      {apis.map((group) => (
        <section class="api-scopes">
          <p>
            <strong>{group.resource.name}</strong> <span class="muted">({group.resource.id})</span>
          </p>
          <ul class="scopes">
            {group.scopes.map((s) => (
              <li>
                <code>{s.name}</code> <span class="muted">{s.description}</span>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </>
  );
}

/**
 * Under the name of a client that registered itself (RFC 7591): the name is
 * the client's own claim, which no administrator looked at (RFC 7591 §5:
 * a self-asserted client_name may impersonate another application).
 */
export function SelfRegisteredNote(props: { selfRegistered: boolean }) {
  if (!props.selfRegistered) return null;
  return <p class="muted">This application registered itself: its name has not been checked by anyone here.</p>;
}

/**
 * An application as the consent and device pages name it: its name, then its client id when that says
 * something more (the built-in `authcli` is named `authcli`: shown once, never "authcli (authcli)").
 */
export function AppIdentity(props: { name: string; clientId: string }) {
  return (
    <>
      <strong>{props.name}</strong>
      {props.clientId !== props.name && (
        <>
          {' '}
          <span class="muted">({props.clientId})</span>
        </>
      )}
    </>
  );
}
