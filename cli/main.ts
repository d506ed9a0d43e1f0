// `sandlot <command>`: one process entry for every mode, parsed by commander. Exit codes: 0 ok,
// 1 failure, 2 usage (a wrong command, flag or value).
//
// Each command's module is imported inside its action, so `sandlot --help` (or `sandlot token
// --help`) loads commander and this file only: no database driver, HTTP framework or queue client.
//
// Streams: stdout carries what a command answers (tables, JSON, tokens, the "listening" line a
// script waits for, help); stderr carries errors and usage mistakes, and the JSON log lines of the
// long-running commands (serve, worker). A script can read stdout without ever meeting a log line.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from '../config/errors.ts';
import { sandboxStates } from '../machines/environment-context.ts';
import type { AttemptsOptions, FenceOptions, ListOptions, ReleaseOptions, TargetOptions } from './envs.ts';
import type { HistoryOptions } from './history.ts';
import type { InspectOptions } from './inspect.ts';
import type { TrustOptions } from './hosts.ts';
import {
  DEFAULT_INSPECTOR_PORT,
  UsageError,
  defaultInspectorUrl,
  parseRelayPort,
  inspectTarget,
  parsePort,
  parseWebSocketUrl,
} from './usage.ts';

/** The full name of a (sub)command, for error lines: `sandlot machines export`. */
function pathOf(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** A period in milliseconds: a positive integer up to a day. */
function parsePositiveMs(value: string): number {
  const ms = Number(value);
  if (!/^\d+$/.test(value.trim()) || ms < 1 || ms > 86_400_000)
    throw new InvalidArgumentError(`must be milliseconds 1-86400000, got "${value}"`);
  return ms;
}

/** Days to keep: a whole number 1-36500, as SANDLOT_RETENTION_DAYS takes. */
function parseRetentionDays(value: string): number {
  const days = Number(value);
  if (!/^\d+$/.test(value.trim()) || days < 1 || days > 36_500)
    throw new InvalidArgumentError(`must be whole days 1-36500, got "${value}"`);
  return days;
}

/** Help text's closing lines: one or more examples. */
const examples = (...lines: string[]) =>
  `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** `--inspect [port|url]`: bare it is `true` (the default relay); a value is checked here. */
function inspectOption(): Option {
  return new Option(
    '--inspect [port|url]',
    `send every committed transition to the Stately inspector relay (bare: ${defaultInspectorUrl()})`,
  ).argParser((value) => inspectTarget(value) as string);
}

/** The relay's URL from `--inspect`'s value, or undefined when inspection is off. */
const inspectUrl = (value: string | boolean | undefined): string | undefined =>
  inspectTarget(value) ?? undefined;

/** A whole number in [min, max], for page sizes and fences. */
const parseWhole = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max)
    throw new InvalidArgumentError(`must be a whole number ${min}-${max}, got "${value}"`);
  return n;
};

/** The options every command that talks to a running server takes (cli/remote.ts). */
function remoteOptions(sub: Command): Command {
  return sub
    .option('--url <url>', 'the server (default SANDLOT_URL or http://127.0.0.1:8080)')
    .option('--token <token>', 'a bearer token (visible to other local users: prefer the two below)')
    .option('--token-file <file>', 'read the bearer token from this file')
    .option('--tenant <tenant>', 'embedded, no token given: the tenant of the minted dev token', undefined)
    .option('--sub <subject>', 'embedded, no token given: its subject (default demo-user)')
    .option('--json', 'print JSON (the list: one Environment a line) instead of a table', false);
}

const remoteHelp =
  '\nThe token comes from --token, --token-file or SANDLOT_TOKEN. Without one, beside an embedded `sandlot serve`\n' +
  '(same SANDLOT_DATA_DIR) a dev token is minted for demo-user in tenant demo, as `sandlot demo` does.\n' +
  'An Environment is <project>/<run>/<environmentId>, or env_… with --project. A refusal exits 1.\n';

/** Set by the action that runs: serve and worker keep running after their action resolved. */
let running: { name: string; longRunning: boolean } = { name: 'sandlot', longRunning: false };

function buildProgram(): Command {
  const program = new Command('sandlot')
    .description('Sandlot: a control plane that leases agent sandboxes to Environments.')
    .usage('<command> [options]')
    .exitOverride()
    .showSuggestionAfterError(true)
    .showHelpAfterError(true)
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'sandlot: ')) })
    .addHelpText(
      'after',
      '\nConfiguration comes from environment variables; see README.md. Run `sandlot <command> --help` for a command.\n',
    );
  program.hook('preAction', (_root, action) => {
    const name = pathOf(action);
    running = { name, longRunning: name === 'sandlot serve' || name === 'sandlot worker' };
  });

  /** A subcommand with its own error prefix and a short pointer to its help after a mistake. */
  const command = (parent: Command, name: string) => {
    const sub = parent.command(name);
    const full = `${pathOf(parent)} ${name}`;
    return sub
      .showHelpAfterError(`(run \`${full} --help\` for its options)`)
      .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, `${full}: `)) });
  };

  command(program, 'serve')
    .description('run the API, and (unless --no-workers) the effect workers, outbox relay and reconciler')
    .option('--port <port>', 'listen on this port (0: any free port; default PORT or 8080)', parsePort)
    .option('--no-workers', 'API only: effects are run by `sandlot worker` processes (needs DATABASE_URL)')
    .addOption(inspectOption())
    .addHelpText('after', examples('sandlot serve --port 8080', 'sandlot serve --no-workers --inspect 4242'))
    .action(async ({ inspect, ...options }: { port?: number; workers: boolean; inspect?: string | true }) => {
      const url = inspectUrl(inspect);
      await (
        await import('./serve.ts')
      ).serveCommand({ ...options, ...(url === undefined ? {} : { inspect: url }) });
    });

  command(program, 'worker')
    .description('run effect workers, outbox relay, reconciler and observer only (needs DATABASE_URL)')
    .addOption(inspectOption())
    .addHelpText('after', examples('DATABASE_URL=postgres://… REDIS_URL=redis://… sandlot worker --inspect'))
    .action(async ({ inspect }: { inspect?: string | true }) => {
      const url = inspectUrl(inspect);
      await (await import('./worker.ts')).workerCommand(url === undefined ? {} : { inspect: url });
    });

  command(program, 'migrate')
    .description('apply pending database migrations and exit')
    .addHelpText('after', examples('DATABASE_URL=postgres://… sandlot migrate'))
    .action(async () => (await import('./migrate.ts')).migrateCommand());

  command(program, 'token')
    .description('print a dev token signed with the embedded key (embedded mode only)')
    .requiredOption('--tenant <tenant>', 'the tenant the token is for')
    .requiredOption('--sub <subject>', 'the subject (user) it names')
    .option('--admin', 'an operator token (admin routes)', false)
    .option('--ttl <duration>', 'lifetime, e.g. 30m, 1h, 7d', '1h')
    .option('--project <project>', 'bind the token to one run: its project (with --run)')
    .option('--run <run>', 'bind the token to one run: its run ID (with --project)')
    .addHelpText(
      'after',
      examples(
        'sandlot token --tenant acme --sub alice',
        'sandlot token --tenant acme --sub ops --admin --ttl 15m',
      ),
    )
    .action(
      async (options: {
        tenant: string;
        sub: string;
        admin: boolean;
        ttl: string;
        project?: string;
        run?: string;
      }) => (await import('./token.ts')).tokenCommand(options),
    );

  command(program, 'demo')
    .description('run one sandbox lease end to end against a running embedded `sandlot serve`')
    .option('--url <url>', 'the server to drive', 'http://127.0.0.1:8080')
    .option('--tenant <tenant>', 'tenant to grant the demo user in', 'demo')
    .option('--project <project>', 'project to run in', 'demo')
    .option('--timeout <seconds>', 'give up waiting for a state after this long', '60')
    .option(
      '--build-test',
      'also run one version 2 BuildTest command on the lease (needs SANDLOT_BUILDTEST_PROFILE_FILE)',
    )
    .option(
      '--suspend-resume',
      'also suspend the lease (flush, release) and resume it on a new one, verified',
    )
    .addHelpText(
      'after',
      examples(
        'sandlot demo --url http://127.0.0.1:8080',
        'SANDLOT_BUILDTEST_PROFILE_FILE=build-test.json sandlot demo --build-test',
        'sandlot demo --suspend-resume',
      ),
    )
    .action(
      async (options: {
        url: string;
        tenant: string;
        project: string;
        timeout: string;
        buildTest?: boolean;
        suspendResume?: boolean;
      }) => (await import('./demo.ts')).demoCommand(options),
    );

  const envs = command(program, 'envs')
    .description("a running server's Environments, through its API: list, show, release, abandon, reconcile")
    .addHelpText(
      'after',
      examples('sandlot envs list --project demo', 'sandlot envs show demo/run-1/env_abc…'),
    );
  remoteOptions(command(envs, 'list'))
    .description("list a project's (or one run's) Environments, newest first")
    .requiredOption('--project <project>', 'the project')
    .option('--run <run>', 'only this run')
    .addOption(
      new Option('--state <state>', 'lifecycle state').choices(['Registered', 'Releasing', 'Released']),
    )
    .addOption(new Option('--sandbox-state <state>', 'sandbox state').choices(sandboxStates))
    .option('--unresolved', 'only Environments with unresolved attempts (a blocked release)')
    .option('--pending-cleanups', 'only Environments with open late-resource cleanups')
    .option('--updated-since <time>', 'only Environments changed at or after this RFC 3339 time')
    .option('--limit <n>', 'page size 1-200 (default 50)', parseWhole(1, 200))
    .option('--cursor <cursor>', 'the next page, as the previous one printed')
    .option('--all', 'follow the cursor through every page')
    .addHelpText(
      'after',
      remoteHelp + examples('sandlot envs list --project demo --state Registered --json | jq .'),
    )
    .action(async (options: ListOptions) => (await import('./envs.ts')).listEnvironments(options));
  remoteOptions(command(envs, 'show'))
    .description("an Environment's lifecycle and its current lease")
    .argument('<environment>', '<project>/<run>/<environmentId>, or env_… with --project')
    .option('--project <project>', 'where to look for a bare env_…')
    .addHelpText('after', remoteHelp + examples('sandlot envs show demo/run-1/env_abc…'))
    .action(async (target: string, options: TargetOptions) =>
      (await import('./envs.ts')).showEnvironment(target, options),
    );
  remoteOptions(command(envs, 'release'))
    .description('release an Environment (and its lease)')
    .argument('<environment>', '<project>/<run>/<environmentId>, or env_… with --project')
    .option('--project <project>', 'where to look for a bare env_…')
    .option(
      '--expected-generation <n>',
      'the lifecycle generation it must have (default: its current one)',
      parseWhole(1, 2 ** 31),
    )
    .option('--idempotency-key <key>', 'repeat a release with its key (default: a fresh one)')
    .addHelpText('after', remoteHelp + examples('sandlot envs release demo/run-1/env_abc…'))
    .action(async (target: string, options: ReleaseOptions) =>
      (await import('./envs.ts')).releaseEnvironment(target, options),
    );
  for (const [name, description] of [
    ['abandon', 'abandon the current resource generation: fence first, then release'],
    ['reconcile', 'recover an interrupted operation of the current lease now (an exact listOwned)'],
  ] as const) {
    remoteOptions(command(envs, name))
      .description(description)
      .argument('<environment>', '<project>/<run>/<environmentId>, or env_… with --project')
      .option('--project <project>', 'where to look for a bare env_…')
      .option(
        '--resource-generation <n>',
        "the lease's resource generation (default: the current lease's)",
        parseWhole(1, 2 ** 31),
      )
      .option(
        '--provider-fence <n>',
        "the lease's provider fence (default: the current lease's)",
        parseWhole(1, 2 ** 31),
      )
      .option('--idempotency-key <key>', 'abandon: repeat with its key (default: a fresh one)')
      .addHelpText('after', remoteHelp + examples(`sandlot envs ${name} demo/run-1/env_abc…`))
      .action(async (target: string, options: FenceOptions) => {
        const module = await import('./envs.ts');
        await (name === 'abandon' ? module.abandonLease : module.reconcileLease)(target, options);
      });
  }

  remoteOptions(command(program, 'attempts'))
    .description(
      "an Environment's provider attempts (its current lease's, or --operation's), through the API",
    )
    .argument('<environment>', '<project>/<run>/<environmentId>, or env_… with --project')
    .option('--project <project>', 'where to look for a bare env_…')
    .option('--operation <operationId>', 'another lease of the Environment (op_…)')
    .option('--unresolved', 'only Pending, Dispatched and Unknown attempts', false)
    .addHelpText('after', remoteHelp + examples('sandlot attempts demo/run-1/env_abc… --unresolved'))
    .action(async (target: string, options: AttemptsOptions) =>
      (await import('./envs.ts')).listAttempts(target, options),
    );

  command(program, 'inspect')
    .description("replay an Environment's journal into the Stately inspector, whole and in order, then exit")
    .argument(
      '<environmentId>',
      'the Environment (env_…; with --server also <project>/<run>/<environmentId>)',
    )
    .option('--url <url>', 'the inspector relay to send to', parseWebSocketUrl, defaultInspectorUrl())
    .option('--server <url>', "read through this running server's journal route instead of the database")
    .option('--project <project>', 'with --server: where to look for a bare env_…')
    .option('--token <token>', 'with --server: a bearer token (see `sandlot envs --help`)')
    .option('--token-file <file>', 'with --server: read the bearer token from this file')
    .addHelpText(
      'after',
      examples(
        'sandlot inspector   # in another terminal: the relay and its page',
        'sandlot inspect env_abc… --url ws://127.0.0.1:4242',
        'sandlot inspect demo/run-1/env_abc… --server http://127.0.0.1:8080   # beside a running serve',
      ),
    )
    .action(async (environmentId: string, options: InspectOptions) =>
      (await import('./inspect.ts')).inspectCommand(environmentId, options),
    );

  command(program, 'history')
    .description("print an Environment's journal as a table: revision, time, event, source, states, fences")
    .argument('<environmentId>', 'the Environment (env_…; with --url also <project>/<run>/<environmentId>)')
    .option('--json', 'print the rows as one JSON array instead of a table', false)
    .option('--url <url>', "read through this running server's journal route instead of the database")
    .option('--project <project>', 'with --url: where to look for a bare env_…')
    .option('--token <token>', 'with --url: a bearer token (see `sandlot envs --help`)')
    .option('--token-file <file>', 'with --url: read the bearer token from this file')
    .addHelpText('after', examples('sandlot history env_abc…', 'sandlot history env_abc… --json | jq .'))
    .action(async (environmentId: string, options: HistoryOptions) =>
      (await import('./history.ts')).historyCommand(environmentId, options),
    );

  command(program, 'audit')
    .description(
      'check invariants against the database and the provider: leases, orphans, journals, calls (exit 1 on findings)',
    )
    .option('--json', 'print the report as one JSON document instead of a table', false)
    .addHelpText(
      'after',
      examples('DATABASE_URL=postgres://… sandlot audit', 'sandlot audit --json | jq .counts'),
    )
    .action(async (options: { json: boolean }) => (await import('./audit.ts')).auditCommand(options));

  command(program, 'prune')
    .description(
      'delete acknowledged outbox rows and compact the journals of long-released Environments (what workers do every SANDLOT_PRUNE_EVERY_MS)',
    )
    .option('--dry-run', 'count what would go; change nothing', false)
    .option(
      '--retention-days <days>',
      'keep journals of Environments released fewer days ago (default SANDLOT_RETENTION_DAYS, 30)',
      parseRetentionDays,
    )
    .option('--json', 'print the counts as one JSON object', false)
    .addHelpText(
      'after',
      examples('sandlot prune --dry-run', 'DATABASE_URL=postgres://… sandlot prune --retention-days 7'),
    )
    .action(async (options: { dryRun: boolean; json: boolean; retentionDays?: number }) =>
      (await import('./prune.ts')).pruneCommand(options),
    );

  command(program, 'inspector')
    .description(
      'run the local inspector relay: a page that frames the Stately inspector (or says it cannot be reached), and its WebSocket',
    )
    .option(
      '--port <port>',
      'listen on this port (not 0: the page names it)',
      parseRelayPort,
      DEFAULT_INSPECTOR_PORT,
    )
    .option('--host <host>', 'listen on this address (0.0.0.0: every interface)', '127.0.0.1')
    .option('--open', 'open the page in the default browser', false)
    .option(
      '--url <url>',
      'the Sandlot server whose /console the page points to (default SANDLOT_URL or http://127.0.0.1:8080)',
    )
    .addHelpText('after', examples('sandlot inspector --port 4242   # then: sandlot serve --inspect 4242'))
    .action(async (options: { port: number; host: string; open: boolean; url?: string }) => {
      running = { name: 'sandlot inspector', longRunning: true };
      await (await import('./inspector.ts')).inspectorCommand(options);
    });

  const dev = command(program, 'dev')
    .description('try production mode on one machine: stand-ins for the services it calls, and their tokens')
    .addHelpText('after', examples('sandlot dev upstream', 'sandlot dev token --sub alice'));
  command(dev, 'upstream')
    .description(
      'serve stand-ins for the JWKS, Projects and run-selection services on 127.0.0.1 and print the settings to export',
    )
    .option('--port <port>', 'listen on this port (0: any free port)', parsePort, 8181)
    .option('--dir <dir>', 'where the signing key and the env file go', '.sandlot/upstream')
    .option('--tenant <tenant>', 'the tenant the stand-ins allow', 'acme')
    .option('--project <project>', 'the project every subject of the tenant may use', 'checkout')
    .option('--run <run>', 'the run whose selection names the simulated provider', 'run-1')
    .option(
      '--options-revision <revision>',
      'the provider options revision the selection pins (SANDLOT_PROVIDER_OPTIONS_REVISION)',
      '1',
    )
    .addHelpText(
      'after',
      '\nNot for a deployment: it allows one tenant, project and run, and keeps its key in --dir.\n' +
        examples('sandlot dev upstream   # then, in another shell: source .sandlot/upstream/env'),
    )
    .action(
      async (options: {
        port: number;
        dir: string;
        tenant: string;
        project: string;
        run: string;
        optionsRevision: string;
      }) => {
        running = { name: 'sandlot dev upstream', longRunning: true };
        await (await import('./dev-upstream.ts')).devUpstreamCommand(options);
      },
    );
  command(dev, 'token')
    .description('print a token signed with the key of the running `sandlot dev upstream`')
    .requiredOption('--sub <subject>', 'the subject (user) it names')
    .option('--dir <dir>', 'the `dev upstream` directory', '.sandlot/upstream')
    .option('--tenant <tenant>', "the tenant claim (default: the stand-ins' tenant)")
    .option('--admin', 'an operator token', false)
    .option('--ttl <duration>', 'lifetime, e.g. 30m, 1h, 7d', '1h')
    .addHelpText('after', examples('TOKEN=$(sandlot dev token --sub alice)'))
    .action(async (options: { dir: string; sub: string; tenant?: string; admin: boolean; ttl: string }) =>
      (await import('./dev-upstream.ts')).devTokenCommand(options),
    );

  const networkPolicy = command(program, 'network-policy')
    .description("a project's network policy generations (production mode, table-verified providers)")
    .addHelpText(
      'after',
      examples(
        'sandlot network-policy register --tenant acme --project checkout --generation 1 --policy policy.json',
      ),
    );
  command(networkPolicy, 'register')
    .description(
      'register a network policy generation (immutable) for the simulated or sandbox-host provider; uses DATABASE_URL',
    )
    .requiredOption('--tenant <tenant>', 'the tenant')
    .requiredOption('--project <project>', 'the project')
    .requiredOption('--generation <n>', 'the generation (1 and up; a provision names it)')
    .requiredOption('--policy <file>', 'the policy document: one JSON object (Cilium rules)')
    .addHelpText(
      'after',
      '\nThe same document again is a no-op; a different one under a registered generation is refused (exit 1).\n' +
        'Refused with SANDLOT_PROVIDER=agent-sandbox: there the CiliumNetworkPolicy in the cluster is read back.\n' +
        examples(
          'sandlot network-policy register --tenant acme --project checkout --generation 1 --policy policy.json',
        ),
    )
    .action(async (options: { tenant: string; project: string; generation: string; policy: string }) =>
      (await import('./network-policy.ts')).registerNetworkPolicyCommand(options),
    );

  const machines = command(program, 'machines')
    .description('the state machine definitions')
    .addHelpText('after', examples('sandlot machines export --format mermaid'));
  command(machines, 'export')
    .description(
      "print the Environment machine's definition: JSON (Stately editor and inspector), Mermaid or DOT",
    )
    .addOption(
      new Option('--format <format>', 'output format').choices(['json', 'mermaid', 'dot']).default('json'),
    )
    .addHelpText(
      'after',
      examples(
        'sandlot machines export --format mermaid',
        'sandlot machines export --format dot | dot -Tsvg > environment.svg',
      ),
    )
    .action(async (options: { format: 'json' | 'mermaid' | 'dot' }) =>
      (await import('./machines.ts')).machinesExportCommand(options),
    );

  const host = command(program, 'host')
    .description('run the reference sandbox host (a process on the host machine), or clean up after it')
    .addHelpText('after', examples('sandlot host run --config /etc/sandlot/host.json'));
  command(host, 'run')
    .description(
      'poll the control listener over mTLS, run signed assignments, report host-signed results (until SIGTERM/SIGINT)',
    )
    .requiredOption(
      '--config <file>',
      'the host declaration (JSON; see deploy/sandbox-host/reference.example.json)',
    )
    .option('--health-every <ms>', 'log a health line this often', parsePositiveMs, 60_000)
    .addHelpText(
      'after',
      '\nThe declaration is strict JSON: hostId, journalDir, sandboxesDir, control { url, address?, caFile },\n' +
        'clientCertFile, clientKeyFile, resultKey { file, version }, trust { current, next?, revocationEpoch },\n' +
        'pollIntervalMs, retry? { attempts, initialBackoffMs, maxBackoffMs }. One process per journalDir (locked).\n' +
        'Exits 1 on a bad declaration or file, a locked or corrupt journal, or when the control plane stays\n' +
        'unreachable after the bounded retries. See docs/sandbox-host.md.\n' +
        examples('sandlot host run --config /etc/sandlot/host.json'),
    )
    .action(async (options: { config: string; healthEvery: number }) =>
      (await import('./host.ts')).hostRunCommand(options),
    );
  command(host, 'cleanup')
    .description(
      "confirm an operator's cleanup of a quarantined operation in the host's journal (daemon stopped)",
    )
    .requiredOption('--config <file>', 'the host declaration the daemon runs with')
    .requiredOption('--operation <id>', 'the quarantined operation')
    .requiredOption('--operator <name>', 'who confirms the cleanup (journaled)')
    .addHelpText(
      'after',
      '\nRefused while `sandlot host run` holds the journal, and for an operation that is not quarantined.\n' +
        examples('sandlot host cleanup --config host.json --operation op-123 --operator alice'),
    )
    .action(async (options: { config: string; operation: string; operator: string }) =>
      (await import('./host.ts')).hostCleanupCommand(options),
    );

  const hosts = command(program, 'hosts')
    .description("the control plane's sandbox-host fleet: verification trust, enrollment, listing")
    .addHelpText('after', examples('DATABASE_URL=postgres://… sandlot hosts list'));
  command(hosts, 'trust')
    .description(
      "establish or replace the control plane's envelope verification trust (current, next, epoch)",
    )
    .requiredOption('--public-key <file>', 'the current Ed25519 public key (SPKI PEM)')
    .requiredOption('--version <n>', 'its version (SANDLOT_HOST_SIGNING_KEY_VERSION of its private key)')
    .requiredOption('--not-before <iso>', 'valid from (ISO 8601 instant with a zone)')
    .requiredOption('--not-after <iso>', 'valid until (exclusive)')
    .option('--next-public-key <file>', 'the key being rotated to (with the three --next-* below)')
    .option('--next-version <n>', "the next key's version (above --version)")
    .option('--next-not-before <iso>', "the next key's validity start")
    .option('--next-not-after <iso>', "the next key's validity end")
    .requiredOption('--epoch <n>', 'the revocation epoch (never decreases)')
    .addHelpText(
      'after',
      '\nA replacement may not bring back a retired version, lower a version or the epoch, or change a kept\n' +
        'key. Hosts verify against the trust in their own declarations. Uses DATABASE_URL (or the embedded data).\n' +
        examples(
          'sandlot hosts trust --public-key control-v1.pub.pem --version 1 --not-before 2026-01-01T00:00:00Z --not-after 2027-01-01T00:00:00Z --epoch 1',
        ),
    )
    .action(async (options: TrustOptions) => {
      await (await import('./hosts.ts')).trustHosts(options);
    });
  command(hosts, 'enroll')
    .description('enroll a host through the local-unsafe verifier (metadata only, NOT hardware attestation)')
    .requiredOption('--evidence <file>', 'JSON { hostId, certificatePem, resultPublicKeyPem }')
    .addHelpText(
      'after',
      '\nThe local-unsafe-metadata-only profile checks that the document is consistent (CN = hostId, a\n' +
        'current clientAuth certificate, an Ed25519 result key) and nothing else. Prints the outcome, the\n' +
        'host id and the evidence digest; exits 1 when refused.\n' +
        examples('sandlot hosts enroll --evidence host-1.evidence.json'),
    )
    .action(async (options: { evidence: string }) => {
      await (await import('./hosts.ts')).enrollHostFromFile(options);
    });
  command(hosts, 'list')
    .description('list enrolled hosts with their state and certificate generations')
    .option('--json', 'print one JSON array instead of a table', false)
    .addHelpText('after', examples('sandlot hosts list', 'sandlot hosts list --json | jq .'))
    .action(async (options: { json: boolean }) => {
      await (await import('./hosts.ts')).listHosts(options);
    });

  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  if (argv.length === 0) {
    // No command: the overview, as a usage mistake.
    process.stderr.write(program.helpInformation());
    return 2;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    // Help and --version end here with code 0; every parse mistake commander caught is a usage error.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof UsageError) {
      process.stderr.write(`${running.name}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    process.stderr.write(`${running.name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
// `serve`, `worker`, `inspector` and `dev upstream` keep running until a signal; every other command ends here.
if (!running.longRunning || code !== 0) process.exitCode = code;
