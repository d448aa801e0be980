// What docs/conformance.md and docs/claims.md tell a relying party about authentication context classes follows
// oauth/acr.ts: every class discovery lists, how many there are, and acr_values as a step-up preference.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ACR_VALUES_SUPPORTED } from '../src/oauth/acr.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (page: string) => readFileSync(`${root}${page}`, 'utf8').replace(/\s+/g, ' ');
const COUNT = ['none', 'one', 'two', 'three', 'four', 'five'];

describe('the documented acr classes', () => {
  it.each([
    'docs/conformance.md',
    'docs/claims.md',
  ])('%s names every class of acr_values_supported, and acr_values as a step-up preference', (page) => {
    const text = read(page);
    for (const acr of ACR_VALUES_SUPPORTED) expect(text).toContain(`\`${acr}\``);
    expect(text).toMatch(new RegExp(`\\b${COUNT[ACR_VALUES_SUPPORTED.length]}\\b[^.]{0,20}\`acr_values_supported\``));
    expect(text).toMatch(/`acr_values`,? (is )?a step-up preference/);
    expect(text).not.toMatch(/Accepted and ignored\*\*:[^.]*`acr_values`|`acr_values` is voluntary and answered with that class/);
  });
});
