/**
 * The page the playground writes on: the issuer and redirect URI it was
 * served with (data attributes of #playground) and the helpers that add to
 * it. Every value goes into the page as text, never as HTML: these helpers
 * take text and nodes only.
 */

/** #playground: its data attributes are what the server says the playground runs with. */
export const root = document.getElementById('playground')!;
export const issuer = root.dataset.issuer!;
export const redirectUri = root.dataset.redirectUri!;
const steps = document.getElementById('steps')!;

/** An element with attributes and children, text or nodes: nothing is parsed as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

/** A new step, a titled card, at the end of #steps. */
export function step(title: string, ...content: (Node | string)[]): HTMLElement {
  const s = el('section', { class: 'card step' }, el('h2', {}, title), ...content);
  steps.append(s);
  return s;
}

/** Preformatted text, labelled (for screen readers and the e2e test) when a label is given. */
export function pre(text: string, label?: string): HTMLElement {
  return el('pre', label ? { 'aria-label': label } : {}, text);
}

/** One line of a checklist: ✔ or ✘, what was checked, and the detail if any. */
export function check(label: string, ok: boolean, detail = ''): HTMLElement {
  return el(
    'li',
    { class: ok ? 'check ok' : 'check fail', 'data-check': label },
    `${ok ? '✔' : '✘'} ${label}${detail ? ` — ${detail}` : ''}`,
  );
}

/** A value as indented JSON, for `pre`. */
export const json = (v: unknown) => JSON.stringify(v, null, 2);
