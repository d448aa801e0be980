#!/usr/bin/env node
// Committed so the workspace can link the bin before the first build; the code is the tsup bundle.
//
// CommonJS on purpose: `authcli token` with a valid cached token (scripts and kubectl call it constantly) is
// answered by dist/token-fast.cjs, one CommonJS file, before Node's ESM loader is started at all; an ES module
// entry costs that loader's start on every call (bench/README.md, "CLI cold start"). Everything else, and a token
// the fast path cannot answer (a refresh, an error, --help), goes to the ES module build, dist/cli.js.
'use strict';

function full() {
  return import('../dist/cli.js');
}

// `--profile NAME` may come before the command name too (`authcli --profile work token`), as in kubectl.
const args = process.argv.slice(2);
const lead = [];
while (args.length > 0 && /^--profile(=.+)?$/.test(args[0])) lead.push(...args.splice(0, args[0] === '--profile' ? 2 : 1));
if (args[0] === 'token') {
  require('../dist/token-fast.cjs')
    .cachedToken([...lead, ...args.slice(1)])
    .then((answered) => answered || full());
} else {
  full();
}
