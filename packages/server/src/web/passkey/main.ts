/**
 * Passkeys in the browser (/assets/passkey.js): the sign-in page's "Sign in
 * with a passkey" button and username autofill (conditional mediation), and
 * the account page's "Add a passkey". @simplewebauthn/browser turns the
 * server's options into a WebAuthn call and its answer into JSON; the pages'
 * CSP allows no inline script, so this module finds its elements by id and
 * shows them only when the browser can use passkeys.
 */
import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  startAuthentication,
  startRegistration,
  WebAuthnError,
} from '@simplewebauthn/browser';

/** A CSRF-protected form POST answered with JSON; `error` carries the server's reason when it refused. */
async function post(path: string, fields: Record<string, string>): Promise<{ ok: boolean; body: Record<string, unknown> }> {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    credentials: 'same-origin',
  });
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    body = { error: `The server answered ${res.status}.` };
  }
  return { ok: res.ok, body };
}

/** What to tell the person when the ceremony failed: cancelled, refused by the authenticator, or the server's reason. */
function problem(err: unknown): string | undefined {
  if (err instanceof WebAuthnError && err.code === 'ERROR_CEREMONY_ABORTED') return undefined;
  if (err instanceof Error && err.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out.';
  if (err instanceof Error && err.name === 'AbortError') return undefined;
  return err instanceof Error ? err.message : String(err);
}

function show(el: HTMLElement | null, text: string | undefined): void {
  if (!el) return;
  el.textContent = text ?? '';
  el.hidden = !text;
}

/** The sign-in page: a passkey button, and passkeys offered in the username field's autofill. */
async function signInPage(box: HTMLElement): Promise<void> {
  const csrf = box.dataset.csrf ?? '';
  const resume = box.dataset.continue ?? '';
  const error = document.getElementById('passkey-signin-error');
  const button = document.getElementById('passkey-signin-button') as HTMLButtonElement | null;
  const ceremony = async (autofill: boolean) => {
    const options = await post('/signin/passkey/options', { _csrf: csrf });
    if (!options.ok) throw new Error(String(options.body.error));
    const answer = await startAuthentication({ optionsJSON: options.body as never, useBrowserAutofill: autofill });
    const done = await post('/signin/passkey', { _csrf: csrf, continue: resume, response: JSON.stringify(answer) });
    if (!done.ok) throw new Error(String(done.body.error));
    window.location.assign(String(done.body.location));
  };
  box.hidden = false;
  button?.addEventListener('click', () => {
    show(error, undefined);
    if (button) button.disabled = true;
    ceremony(false)
      .catch((err: unknown) => show(error, problem(err)))
      .finally(() => {
        if (button) button.disabled = false;
      });
  });
  if (document.querySelector('input[autocomplete~="webauthn"]') && (await browserSupportsWebAuthnAutofill())) {
    // Waits in the background until the person picks a passkey in the username field's suggestions; a click on
    // the button starts a ceremony of its own, which ends this one (@simplewebauthn/browser's abort service).
    ceremony(true).catch((err: unknown) => show(error, problem(err)));
  }
}

/** The account page: name a passkey, then create it with the authenticator. */
function accountPage(form: HTMLFormElement): void {
  const csrf = form.dataset.csrf ?? '';
  const error = document.getElementById('passkey-add-error');
  const button = document.getElementById('passkey-add-button') as HTMLButtonElement | null;
  const unsupported = document.getElementById('passkey-add-unsupported');
  if (unsupported) unsupported.hidden = true;
  if (button) button.hidden = false;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    show(error, undefined);
    if (button) button.disabled = true;
    const name = (form.elements.namedItem('name') as HTMLInputElement | null)?.value ?? '';
    // Refused for want of a recent (passkey) sign-in, the answer names where to sign in again: go there.
    const reauthenticate = (body: Record<string, unknown>) => {
      if (typeof body.location !== 'string' || !body.location.startsWith('/signin')) return false;
      window.location.assign(body.location);
      return true;
    };
    (async () => {
      const options = await post('/account/passkeys/options', { _csrf: csrf });
      if (!options.ok && reauthenticate(options.body)) return;
      if (!options.ok) throw new Error(String(options.body.error));
      const answer = await startRegistration({ optionsJSON: options.body as never });
      const done = await post('/account/passkeys', { _csrf: csrf, name, response: JSON.stringify(answer) });
      if (!done.ok && reauthenticate(done.body)) return;
      if (!done.ok) throw new Error(String(done.body.error));
      // The page lists it, with the server's notice.
      window.location.reload();
    })()
      .catch((err: unknown) => show(error, problem(err)))
      .finally(() => {
        if (button) button.disabled = false;
      });
  });
}

if (browserSupportsWebAuthn()) {
  const box = document.getElementById('passkey-signin');
  if (box) void signInPage(box);
  const form = document.getElementById('passkey-add');
  if (form instanceof HTMLFormElement) accountPage(form);
}
