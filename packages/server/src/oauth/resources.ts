/**
 * A team's own APIs as RFC 8707 resources: what an operator may define (an absolute URI as the identifier, a
 * name, scopes of its own with descriptions), and which API a grant and a token are for. A grant covers the
 * resources its request named with `resource` and those its scopes imply (a scope names its API: scope names
 * are unique across resources); an access token is for one of them at a time: `aud` is that API's identifier
 * and `scope` only that API's scopes (RFC 8707 §2.2, RFC 9068 §3). A grant of OpenID Connect scopes alone
 * covers no resource, and its tokens are as they always were (`aud` the issuer).
 */
import type { Resource, ResourceCatalog, ResourceScope } from '../store/store.js';
import type { OAuthContext } from './context.js';
import { InputError } from '../util/input-error.js';
import { InvalidTarget } from './errors.js';
import { isSupportedScope } from './scopes.js';

/** The longest resource identifier: a URL an operator types, and every token repeats. */
export const RESOURCE_ID_MAX = 255;
/** The longest API name and scope description: a line on a consent page. */
export const RESOURCE_NAME_MAX = 100;
export const SCOPE_DESCRIPTION_MAX = 200;
/** Scopes one resource may have: a consent page lists each. */
export const RESOURCE_SCOPES_MAX = 50;

// RFC 6749 §3.3 scope-token, without the space that separates them.
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/;
// Control characters and invisible formatting (bidi overrides, zero-width): never on a consent page.
const UNSAFE_TEXT = /[\p{Cc}\p{Cf}]/u;

/**
 * Checks a resource identifier as RFC 8707 §2 asks of `resource`: an absolute URI without a fragment. https, or
 * http for a loopback or private development API; the operator's exact spelling is kept, as tokens carry it.
 * @returns a problem, or undefined when it is a valid identifier
 */
export function resourceIdProblem(id: string): string | undefined {
  if (id.length === 0 || id.length > RESOURCE_ID_MAX) return `a resource identifier is 1-${RESOURCE_ID_MAX} characters`;
  let url: URL;
  try {
    url = new URL(id);
  } catch {
    return `${id} is not an absolute URI (RFC 8707: e.g. https://api.example.com)`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'a resource identifier is an https (or http) URL';
  if (id.includes('#')) return 'a resource identifier has no fragment (RFC 8707 section 2)';
  if (/\s/.test(id)) return 'a resource identifier has no spaces';
  return undefined;
}

/** `name=description` or a bare `name` (its description is then the name) as `--scope` takes them. */
export function parseScopeArgument(arg: string): ResourceScope {
  const eq = arg.indexOf('=');
  const name = (eq === -1 ? arg : arg.slice(0, eq)).trim();
  const description = (eq === -1 ? '' : arg.slice(eq + 1)).trim();
  return { name, description: description || name };
}

/**
 * Validates a resource as an operator defines it.
 * @throws InputError naming what is wrong
 */
export function validateResource(input: { id: string; name: string; scopes: readonly ResourceScope[] }): {
  id: string;
  name: string;
  scopes: ResourceScope[];
} {
  const id = input.id.trim();
  const problem = resourceIdProblem(id);
  if (problem) throw new InputError(problem);
  const name = input.name.trim();
  if (!name || name.length > RESOURCE_NAME_MAX) throw new InputError(`a resource name is 1-${RESOURCE_NAME_MAX} characters`);
  if (UNSAFE_TEXT.test(name)) throw new InputError('a resource name must not contain control characters or invisible formatting');
  if (input.scopes.length === 0) throw new InputError('a resource has at least one scope (--scope NAME=DESCRIPTION)');
  if (input.scopes.length > RESOURCE_SCOPES_MAX) throw new InputError(`a resource has at most ${RESOURCE_SCOPES_MAX} scopes`);
  const seen = new Set<string>();
  const scopes = input.scopes.map((s) => {
    const scope = { name: s.name.trim(), description: s.description.trim() };
    if (!SCOPE_TOKEN.test(scope.name)) {
      throw new InputError(
        `the scope ${JSON.stringify(scope.name)} is not a scope name (1-64 printable characters, no space, quote or backslash)`,
      );
    }
    if (isSupportedScope(scope.name))
      throw new InputError(`${scope.name} is an OpenID Connect scope: an API's scopes have names of their own`);
    if (seen.has(scope.name)) throw new InputError(`the scope ${scope.name} is given twice`);
    seen.add(scope.name);
    if (!scope.description || scope.description.length > SCOPE_DESCRIPTION_MAX) {
      throw new InputError(`the description of ${scope.name} is 1-${SCOPE_DESCRIPTION_MAX} characters`);
    }
    if (UNSAFE_TEXT.test(scope.description)) throw new InputError(`the description of ${scope.name} must not contain control characters`);
    return scope;
  });
  return { id, name, scopes };
}

/**
 * The resources named by `resource` parameters (RFC 8707 §2): each one of this server's, and one the application
 * is allowed at least one scope of (an application the operator gave none of an API's scopes gets no token for it).
 * @throws InvalidTarget
 */
export function namedResources(values: readonly string[], catalog: ResourceCatalog, allowedScopes: readonly string[]): string[] {
  const out: string[] = [];
  for (const value of values) {
    if (resourceIdProblem(value)) throw new InvalidTarget('resource must be an absolute URI without a fragment (RFC 8707 section 2)');
    const resource = catalog.byId.get(value);
    if (!resource) throw new InvalidTarget('the resource is not an API this server issues tokens for');
    if (!resource.scopes.some((s) => allowedScopes.includes(s.name))) {
      throw new InvalidTarget(`this application is allowed none of the scopes of ${value}`);
    }
    if (!out.includes(value)) out.push(value);
  }
  return out;
}

/**
 * The resources a grant covers: those named, then those its scopes imply, each once. A named API none of whose
 * scopes is asked for is invalid_target: the person would approve nothing of it (consent shows scopes).
 * @throws InvalidTarget
 */
export function coveredResources(named: readonly string[], scopes: readonly string[], catalog: ResourceCatalog): string[] {
  for (const id of named) {
    if (!scopes.some((s) => catalog.byScope.get(s)?.id === id)) {
      throw new InvalidTarget(`ask for at least one scope of ${id} with it (scope), so that it can be approved`);
    }
  }
  const out = [...named];
  for (const scope of scopes) {
    const id = catalog.byScope.get(scope)?.id;
    if (id !== undefined && !out.includes(id)) out.push(id);
  }
  return out;
}

/** How a grant's resources are stored (null: none, the grants of OpenID Connect scopes alone). */
export const storedResources = (ids: readonly string[]): string | null => (ids.length > 0 ? ids.join(' ') : null);
export const resourcesOf = (stored: string | null | undefined): string[] => (stored ? stored.split(' ') : []);

/** Who a token is for: one of the team's APIs, with the grant's scopes that are that API's. */
export interface TokenAudience {
  readonly resource: Resource;
  readonly scopes: string[];
}

/**
 * Which API a token request gets a token for (RFC 8707 §2.2): the `resource` it names, which the grant must
 * cover; else the grant's one resource; undefined for a grant that covers none (a token as before). A grant
 * covering several needs the request to name one. A resource removed since is no target.
 * @throws InvalidTarget
 */
export function tokenAudience(
  catalog: ResourceCatalog,
  stored: string | null | undefined,
  scopes: readonly string[],
  requested: readonly string[],
): TokenAudience | undefined {
  const covered = resourcesOf(stored);
  if (requested.length > 1) throw new InvalidTarget('name one resource per token request: each token is for one API');
  const [named] = requested;
  if (named !== undefined && !covered.includes(named)) {
    if (resourceIdProblem(named)) throw new InvalidTarget('resource must be an absolute URI without a fragment (RFC 8707 section 2)');
    throw new InvalidTarget('the grant does not cover that resource: ask for it in the authorization request');
  }
  if (named === undefined && covered.length === 0) return undefined;
  if (named === undefined && covered.length > 1) {
    throw new InvalidTarget(`this grant covers several APIs: name one with resource (one of ${covered.join(', ')})`);
  }
  const id = named ?? covered[0]!;
  const resource = catalog.byId.get(id);
  if (!resource) throw new InvalidTarget('the resource no longer exists on this server');
  const own = new Set(resource.scopes.map((s) => s.name));
  const granted = scopes.filter((s) => own.has(s));
  // A token for an API carries at least one of its scopes: an empty one would pass an API that checks only aud.
  if (granted.length === 0) throw new InvalidTarget(`none of the scopes asked for is one of ${id}: ask for that API's scopes`);
  return { resource, scopes: granted };
}

/**
 * {@link tokenAudience} for a token request: a grant that covers no resource, asked for none, is answered without
 * reading the resources (every token of OpenID Connect scopes alone, the hot path).
 * @throws InvalidTarget
 */
export async function audienceFor(
  ctx: Pick<OAuthContext, 'store'>,
  stored: string | null | undefined,
  scopes: readonly string[],
  requested: readonly string[],
): Promise<TokenAudience | undefined> {
  if (!stored && requested.length === 0) return undefined;
  return tokenAudience(await ctx.store.resources.catalog(), stored, scopes, requested);
}

/**
 * The scopes of a request that are an API's, grouped under it in the order the API lists them, and the rest
 * (OpenID Connect's): what consent and device confirmation pages show.
 */
export function scopesByResource(
  scopes: readonly string[],
  catalog: ResourceCatalog,
): { apis: { resource: Resource; scopes: ResourceScope[] }[]; other: string[] } {
  const apis: { resource: Resource; scopes: ResourceScope[] }[] = [];
  const other: string[] = [];
  for (const scope of scopes) {
    const resource = catalog.byScope.get(scope);
    if (!resource) {
      other.push(scope);
      continue;
    }
    let group = apis.find((g) => g.resource.id === resource.id);
    if (!group) {
      group = { resource, scopes: [] };
      apis.push(group);
    }
    group.scopes.push(resource.scopes.find((s) => s.name === scope)!);
  }
  return { apis, other };
}
