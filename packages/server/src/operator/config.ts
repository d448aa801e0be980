import { printJson, printTable } from './output.js';
import type { Command } from 'commander';
import { loadConfig, type ConfigInput } from '../config/config.js';
import { describeConfig } from '../config/describe.js';

/** `authcli-server config`: the settings `start` would run with, and where each came from. */
export function configCommand(cli: Command): void {
  cli
    .command('config')
    .description('print the settings `start` would run with (same flags and environment), and where each came from')
    .option('--port <port>', 'as for start')
    .option('--host <host>', 'as for start')
    .option('--issuer <url>', 'as for start')
    .option('--database <url>', 'as for start')
    .option('--metrics-port <port>', 'as for start')
    .option('--metrics-host <host>', 'as for start')
    .option('--json', 'print JSON: an array of {name, value, source}')
    .action(async (opts: ConfigInput & { json?: boolean }) => {
      const { json, ...flags } = opts;
      const entries = describeConfig(loadConfig(flags), flags, process.env);
      if (json) {
        printJson(entries, 2);
        return;
      }
      printTable(
        ['NAME', 'VALUE', 'SOURCE'],
        entries.map((e) => [e.name, e.value, e.source]),
      );
    });
}
