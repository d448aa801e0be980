/**
 * The name of a passkey the person added without naming it: the browser and system that added it, read from the
 * User-Agent of the request, and the day ("Chrome on Linux, 29 Nov 2026"), so that two unnamed passkeys are told
 * apart on the account page and in `users passkeys`. A User-Agent names neither for certain (any browser may say
 * anything); it only has to be a good label. The day is UTC: the server does not know the person's time zone.
 */

/** Browsers, first match wins: the ones built on Chrome also say Chrome, and nearly all say Safari. */
const BROWSERS: readonly (readonly [RegExp, string])[] = [
  [/\bEdg(e|A|iOS)?\//, 'Edge'],
  [/\b(OPR|OPT|Opera)\//, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bVivaldi\//, 'Vivaldi'],
  [/\b(Firefox|FxiOS)\//, 'Firefox'],
  [/(Chrome|CriOS)\//, 'Chrome'], // HeadlessChrome too
  [/\bChromium\//, 'Chromium'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
];

/** Systems, first match wins: an iPhone's says "like Mac OS X", Android's says Linux. */
const SYSTEMS: readonly (readonly [RegExp, string])[] = [
  [/\bWindows\b/, 'Windows'],
  [/\biPhone\b/, 'iPhone'],
  [/\biPad\b/, 'iPad'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\b(Macintosh|Mac OS X)\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const first = (table: readonly (readonly [RegExp, string])[], ua: string) => table.find(([pattern]) => pattern.test(ua))?.[1];

/** "Chrome on Linux", "Safari on iPhone", "Firefox" alone when the system is not one of these; undefined for neither. */
export function browserOnSystem(userAgent: string | undefined): string | undefined {
  const ua = (userAgent ?? '').slice(0, 512);
  const browser = first(BROWSERS, ua);
  const system = first(SYSTEMS, ua);
  if (browser && system) return `${browser} on ${system}`;
  return browser ?? system;
}

/** The day of `ms` in UTC, as "29 Nov 2026". */
export const dayOf = (ms: number) => {
  const d = new Date(ms);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
};

/** "Chrome on Linux, 29 Nov 2026"; "Passkey, 29 Nov 2026" when the User-Agent names no browser or system known here. */
export function unnamedPasskeyName(userAgent: string | undefined, now: number): string {
  return `${browserOnSystem(userAgent) ?? 'Passkey'}, ${dayOf(now)}`;
}
