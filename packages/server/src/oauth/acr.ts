/**
 * Authentication context (OIDC Core §2 `acr`, §3.1.2.1 `acr_values`) and
 * methods (RFC 8176 `amr`). A person signs in with a username and password
 * or with a passkey; the session remembers which (`amr`), and the codes and
 * grants it approves carry it to the ID token.
 */

/**
 * The class of a sign-in with a username and password (single factor, no
 * assurance of identity proofing). A URN of this server's own: the
 * registered classes (ISO/IEC 29115 levels, REFEDS profiles) promise more
 * than a password gives.
 */
export const PASSWORD_ACR = 'urn:authcli:acr:password';

/**
 * OpenID EAP ACR Values §2 `phr`, phishing-resistant: a passkey (WebAuthn
 * with user verification), bound to this server's origin, so a look-alike
 * site cannot relay it.
 */
export const PHISHING_RESISTANT_ACR = 'phr';

/**
 * The class of a sign-in through an upstream identity provider (a connector) that asserted nothing stronger:
 * what the person did there is the upstream's to say, and it is carried in `amr` only as far as the upstream
 * reported it. An upstream that asserted `phr` gives `phr`.
 */
export const FEDERATED_ACR = 'urn:authcli:acr:federated';

/** RFC 8176 §2: `pwd`, password-based authentication. */
export const PASSWORD_AMR: readonly string[] = ['pwd'];

/**
 * RFC 8176 §2 methods of a passkey sign-in: proof of possession of a key, `hwk` when the authenticator keeps it
 * on one device, `swk` when it is synced (backed up, so held in software somewhere), and `mfa`: the key is
 * something the person has, unlocked by user verification (a PIN or a biometric), something they know or are.
 */
export function passkeyAmr(backedUp: boolean): readonly string[] {
  return [backedUp ? 'swk' : 'hwk', 'mfa'];
}

/**
 * The methods stored with a session, code or grant (space-separated): null for a password sign-in made before
 * they were stored; empty for a federated sign-in whose upstream reported none (nothing is claimed for it).
 */
export function amrOf(stored: string | null | undefined): readonly string[] {
  if (stored === null || stored === undefined) return PASSWORD_AMR;
  return stored === '' ? [] : stored.split(' ');
}

/** The class a sign-in made by these methods meets. */
export function acrOf(amr: readonly string[]): string {
  return amr.includes('hwk') || amr.includes('swk') ? PHISHING_RESISTANT_ACR : PASSWORD_ACR;
}

/** The authentication context classes this server can satisfy (discovery's `acr_values_supported`), strongest first. */
export const ACR_VALUES_SUPPORTED: readonly string[] = [PHISHING_RESISTANT_ACR, PASSWORD_ACR, FEDERATED_ACR];

/** How strong each class this server satisfies is: a sign-in meets a class when its own is at least as strong. */
const LEVEL: Readonly<Record<string, number>> = { [PASSWORD_ACR]: 1, [FEDERATED_ACR]: 1, [PHISHING_RESISTANT_ACR]: 2 };

/** The class a sign-in has: the one stored with it (a federated sign-in's), else the one its methods give. */
export function classOf(amr: readonly string[], stored?: string | null): string {
  return stored && isSupportedAcr(stored) ? stored : acrOf(amr);
}

export const isSupportedAcr = (acr: string): boolean => Object.hasOwn(LEVEL, acr);

/**
 * Whether a sign-in made by `amr` (of the stored class `stored`, for a federated one) meets the class `acr`: its
 * own, or a weaker one (an unknown class is met by nothing). The password and federated classes meet each other:
 * neither is stronger.
 */
export function meetsAcr(amr: readonly string[], acr: string, stored?: string | null): boolean {
  return isSupportedAcr(acr) && LEVEL[classOf(amr, stored)]! >= LEVEL[acr]!;
}

/** The weakest supported class among `values`: any one of them will do (OIDC Core §3.1.2.1, §5.5.1.1). */
function weakest(values: readonly string[] | undefined): string | undefined {
  return values?.filter(isSupportedAcr).sort((a, b) => LEVEL[a]! - LEVEL[b]!)[0];
}

function strongest(...values: (string | undefined)[]): string | undefined {
  return values.filter((v): v is string => v !== undefined).sort((a, b) => LEVEL[b]! - LEVEL[a]!)[0];
}

/**
 * What an authorization (or a device approval) asks of the sign-in: `essential`, the class it must meet (the
 * application's `--require-acr`, or an essential `acr` claim, §5.5.1.1), and `preferred`, the class `acr_values`
 * asks for (§3.1.2.1: voluntary), when it is stronger. A sign-in below `essential` is stepped up, always; below
 * `preferred`, only when the person has a passkey to step up with.
 */
export function acrRequirement(input: {
  appRequires?: string | null | undefined;
  essentialValues?: readonly string[] | undefined;
  acrValues?: readonly string[] | undefined;
}): { essential?: string; preferred?: string } {
  const essential = strongest(input.appRequires ?? undefined, weakest(input.essentialValues));
  const preferred = weakest(input.acrValues);
  return {
    ...(essential !== undefined && { essential }),
    ...(preferred !== undefined && (essential === undefined || LEVEL[preferred]! > LEVEL[essential]!) && { preferred }),
  };
}

/**
 * The `acr` of an ID token: the sign-in's own class, or, when an essential `acr` claim listed classes without
 * it, the strongest listed class the sign-in meets (§5.5.1.1: the value must be one of those requested).
 */
export function acrFor(amr: readonly string[], essentialValues: readonly string[] | undefined, stored?: string | null): string {
  // A federated sign-in's class is its own: never traded for the password class it is as strong as.
  if (stored && isSupportedAcr(stored)) return stored;
  const own = classOf(amr, stored);
  if (!essentialValues || essentialValues.includes(own)) return own;
  return strongest(...essentialValues.filter((v) => meetsAcr(amr, v, stored))) ?? own;
}
