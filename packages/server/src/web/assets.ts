import { createHash } from 'node:crypto';

/** The one stylesheet of every page: served from memory with a content hash ETag. */
export const STYLESHEET = `
:root { color-scheme: light dark; --fg:#1d2330; --muted:#5b6474; --bg:#f5f6f8; --card:#fff; --line:#dde1e7;
  --accent:#2f5bd3; --accent-fg:#fff; --danger:#b42318; --ok:#067647; --code:#eef1f6; }
@media (prefers-color-scheme: dark) { :root { --fg:#e7e9ee; --muted:#9aa3b2; --bg:#12151b; --card:#1b1f27; --line:#2c323d;
  --accent:#6e8ff0; --accent-fg:#0d1117; --danger:#f97066; --ok:#47cd89; --code:#242a35; } }
* { box-sizing: border-box; }
html { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; }
header.top { display: flex; align-items: center; justify-content: space-between; gap: 1rem; padding: .75rem 1.5rem;
  border-bottom: 1px solid var(--line); background: var(--card); }
header.top .brand { font-weight: 700; letter-spacing: .02em; color: var(--fg); text-decoration: none; display: flex; gap: .45rem; align-items: center; flex: none; }
header.top .brand img { width: 1.4rem; height: 1.4rem; }
header.top nav { display: flex; gap: 1rem; align-items: center; min-width: 0; }
header.top nav form { margin: 0; flex: none; }
header.top .who { min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 16rem; }
/* A phone (360 px): one line, the brand and the links; who is signed in shows on the home page. */
@media (max-width: 40rem) {
  header.top { padding: .6rem .75rem; gap: .5rem; }
  header.top nav { gap: .65rem; font-size: .88rem; }
  header.top .who { display: none; }
  /* The brand's name is said to screen readers but not shown: the mark alone leaves the menu room for its links. */
  header.top .brand-name { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  main { margin: 1.25rem auto; padding: 0 .6rem; }
  .card { padding: 1.1rem; }
  /* A table of records (the dashboard's applications) becomes one block per record, each cell on a line of its
     own under its column's name: four columns of client ids and grant lists are wider than any phone. */
  table.records thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.records, table.records tbody, table.records tr, table.records td { display: block; width: 100%; }
  table.records tr { border-bottom: 1px solid var(--line); padding: .45rem 0; }
  table.records td { border: 0; padding: .1rem 0; overflow-wrap: anywhere; }
  table.records td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-size: .85rem; }
}
.table-wrap { overflow-x: auto; }
.copyable { display: flex; gap: .5rem; align-items: center; }
.copyable input { flex: 1; min-width: 0; }
.copyable button { flex: none; padding: .45rem .9rem; }
.danger-zone { border-top: 1px solid var(--line); margin-top: 1.5rem; }
header.top nav a { color: var(--muted); text-decoration: none; }
header.top nav a:hover, header.top nav a[aria-current="page"] { color: var(--fg); }
main { flex: 1; width: 100%; max-width: 28rem; margin: 2.5rem auto; padding: 0 1rem; }
main.wide { max-width: 64rem; }
/* The sign-in page's "Continue with NAME" links, one a line, as wide as the form. */
ul.connectors { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: .5rem; }
ul.connectors a.button { display: block; text-align: center; }
/* Two columns of cards on a wide screen (the account page), one under the other on a narrow one. */
.columns { display: grid; gap: 1.5rem; }
@media (min-width: 60rem) { .columns { grid-template-columns: 1fr 1fr; align-items: start; } }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 1.75rem; }
.card + .card { margin-top: 1.5rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
p { margin: .5rem 0; }
/* Long words (an issuer URL, a 64-character username) break rather than widen a phone's page. */
p, li, h1 { overflow-wrap: break-word; }
.muted { color: var(--muted); font-size: .92rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
input[type=text], input[type=password], input[type=url], textarea, select { width: 100%; padding: .6rem .7rem; font: inherit;
  color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
input:focus-visible, textarea:focus-visible, select:focus-visible, button:focus-visible, a:focus-visible {
  outline: 3px solid color-mix(in srgb, var(--accent) 45%, transparent); outline-offset: 1px; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; flex-wrap: wrap; }
button, .button { appearance: none; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg);
  font: inherit; font-weight: 600; padding: .6rem 1.2rem; border-radius: 8px; cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary, .button.secondary { background: transparent; color: var(--fg); border-color: var(--line); }
button.danger, .button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
button.link { background: none; border: none; color: var(--muted); padding: 0; font-weight: 400; }
.alert { border-radius: 8px; padding: .75rem 1rem; margin: 0 0 1rem; border: 1px solid var(--danger);
  color: var(--danger); background: color-mix(in srgb, var(--danger) 8%, transparent); }
.success { border-color: var(--ok); color: var(--ok); background: color-mix(in srgb, var(--ok) 8%, transparent); }
ul.scopes { list-style: none; padding: 0; margin: .75rem 0; }
ul.scopes li { padding: .5rem .75rem; border: 1px solid var(--line); border-radius: 8px; margin: .4rem 0; }
ul.scopes li code { font-weight: 600; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
code { background: var(--code); padding: .1em .35em; border-radius: 4px; }
pre { background: var(--code); padding: .75rem 1rem; border-radius: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
.usercode { font-size: 2rem; letter-spacing: .2em; font-weight: 700; text-align: center; margin: 1rem 0; font-family: ui-monospace, monospace; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
/* min-width 0: a fieldset is otherwise as wide as its widest word (the playground's list of callback URLs). */
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0 0; padding: .25rem 1rem .75rem; min-width: 0; }
fieldset p { overflow-wrap: anywhere; }
legend { font-weight: 600; padding: 0 .35rem; }
fieldset label { font-weight: 400; margin: .45rem 0; display: flex; gap: .6rem; align-items: center; }
a { color: var(--accent); }
.step { margin-top: 1rem; }
.step h3 { font-size: .95rem; margin: 1rem 0 .35rem; color: var(--muted); }
ul.checks { list-style: none; padding: 0; }
li.check { padding: .35rem 0; }
li.check.ok { color: var(--ok); }
li.check.fail { color: var(--danger); }
.field-error { color: var(--danger); font-size: .9rem; margin: .3rem 0 0; }
input[aria-invalid=true] { border-color: var(--danger); }
/* The device page's "my device shows this code" box, and the account page's recent sign-ins. */
label.confirm { font-weight: 400; display: flex; gap: .6rem; align-items: flex-start; }
ul.signins { list-style: none; padding: 0; }
ul.signins li { padding: .5rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ul.signins p { margin: .2rem 0 0; }
footer { text-align: center; padding: 1rem; color: var(--muted); font-size: .85rem; }
`;

export const STYLESHEET_ETAG = `"${createHash('sha256').update(STYLESHEET).digest('base64url').slice(0, 22)}"`;

/** The favicon: the brand's key on the accent colour, one SVG for every size. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#2f5bd3"/>
<circle cx="12" cy="16" r="5.5" fill="none" stroke="#fff" stroke-width="3"/>
<path d="M17.5 16H27M23 16v4.5M26 16v3" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/>
</svg>
`;

/** The favicon's version: its URL carries it, so it can be cached for a year and still change. */
export const FAVICON_VERSION = createHash('sha256').update(FAVICON_SVG).digest('base64url').slice(0, 12);
export const FAVICON_PATH = `/assets/favicon-${FAVICON_VERSION}.svg`;
