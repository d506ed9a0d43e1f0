// The entry of every Sandlot process the chaos harness starts (`sandlot serve --no-workers`,
// `sandlot worker`). It records each fault the simulated provider's injector decides, one JSON line
// per fault in CHAOS_FAULT_LOG, then runs the command itself (CHAOS_SANDLOT_MAIN: a build's
// cli/main.js, or the sources' cli/main.ts, loaded through tsx as cli/sandlot.mjs does). The
// provider keeps no record of its faults, and the harness must count what it injected, not guess it
// from outcomes. The line is written synchronously before the call goes on, so a SIGKILL loses none.
//
// Plain JavaScript, so that it runs a build without a loader: tsx registered for the whole process
// would compile the build's .js files as CommonJS.
import { appendFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { setInterval } from 'node:timers';
import { pathToFileURL } from 'node:url';

/** The plan's own latency stays far below this; its scripted spikes reach it. */
const LATENCY_SPIKE_MS = 1_000;

const main = process.env['CHAOS_SANDLOT_MAIN'];
const log = process.env['CHAOS_FAULT_LOG'];
if (main === undefined || log === undefined) {
  process.stderr.write('chaos child: CHAOS_SANDLOT_MAIN and CHAOS_FAULT_LOG must be set\n');
  process.exit(2);
}
// The harness owns this process: if it dies without stopping it (SIGKILL, a test runner's exit),
// the process is reparented, and it ends itself rather than run on unowned.
const harness = process.ppid;
setInterval(() => {
  if (process.ppid !== harness) process.kill(process.pid, 'SIGKILL');
}, 1_000).unref();

const sources = main.endsWith('.ts');
if (sources) (await import('tsx/esm/api')).register();
// The injector of the same tree as the command (build or sources), so the provider uses this module.
const injectorPath = join(
  dirname(main),
  '..',
  'providers',
  'simulated',
  `fault-injector${sources ? '.ts' : '.js'}`,
);
const { FaultInjector } = await import(pathToFileURL(injectorPath).href);
const decide = FaultInjector.prototype.next;
FaultInjector.prototype.next = function (operation) {
  const decision = decide.call(this, operation);
  // A scripted latency spike decides no fault, but it is one: it holds the call for seconds.
  if (decision.fault !== null || decision.latencyMs >= LATENCY_SPIKE_MS) {
    appendFileSync(log, `${JSON.stringify({ at: Date.now(), ...decision })}\n`);
  }
  return decision;
};
await import(pathToFileURL(main).href);
