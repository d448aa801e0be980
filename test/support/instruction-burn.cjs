// A deliberate regression, for the instruction-count guard's own test (test/instructions-regression.e2e.test.ts):
// preloaded with `--require` into the server or the CLI, it makes every HTTP request the process's server receives
// hash INSTR_BURN_BYTES bytes more with SHA-256 on the main thread, and the process's start encode
// INSTR_BURN_START_BYTES bytes to base64. Native code: the same instructions for the same bytes whatever the JIT
// does. node:crypto and node:http are loaded only for the first (the server has them loaded anyway; loading
// node:crypto would add a third to the CLI's start by itself).
const perRequest = Number(process.env.INSTR_BURN_BYTES ?? 0);
const atStart = Number(process.env.INSTR_BURN_START_BYTES ?? 0);
if (perRequest > 0) {
  const { createHash } = require('node:crypto');
  const http = require('node:http');
  const bytes = Buffer.alloc(perRequest, 1);
  // Where each request enters the server. (A diagnostics_channel subscriber would cost more than the hash:
  // Node's HTTP server does work of its own for every request once the channel has one.)
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, ...args) {
    if (event === 'request') createHash('sha256').update(bytes).digest();
    return emit.call(this, event, ...args);
  };
}
if (atStart > 0) Buffer.alloc(atStart, 1).toString('base64');
