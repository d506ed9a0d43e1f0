// The composition root: the one place that picks implementations for the ports from the
// configuration. Everything below it takes its dependencies as arguments.
import type { Logger } from 'pino';
import { environmentDefinition } from '../actors/environment-definition.ts';
import { LifecycleService } from '../actors/lifecycle.ts';
import type { ProjectsAuthority, RunSelectionSource } from '../actors/ports.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import type { Config } from '../config/types.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import { createApp } from '../http/app.ts';
import { loadOrCreateDevKey } from '../http/auth/dev-key.ts';
import { createTokenVerifier, type TokenVerifier } from '../http/auth/verify.ts';
import { HttpProjectsAuthority } from '../http/clients/projects-client.ts';
import { HttpRunSelections } from '../http/clients/run-selection-client.ts';
import { simulatedIdentity } from '../providers/simulated/identity.ts';
import type { Database } from '../store/db.ts';
import { GrantsAuthority } from '../store/grants.ts';
import { migrate } from '../store/migrate.ts';
import { TableRunSelections } from '../store/run-selections.ts';
import { dataDirOf, openDatabase } from './context.ts';

export interface Sandlot {
  db: Database;
  app: ReturnType<typeof createApp>;
  close(): Promise<void>;
}

async function verifierFor(config: Config): Promise<TokenVerifier> {
  const { issuer, audience, jwksUrl, algorithms } = config.auth;
  if (config.mode === 'embedded') {
    return createTokenVerifier({
      kind: 'hs256',
      key: await loadOrCreateDevKey(dataDirOf(config)),
      issuer,
      audience,
    });
  }
  if (jwksUrl === undefined) throw new Error('SANDLOT_JWKS_URL is required in production mode');
  return createTokenVerifier({ kind: 'jwks', jwksUrl, issuer, audience, algorithms });
}

function portsFor(
  config: Config,
  db: Database,
): { authority: ProjectsAuthority; selections: RunSelectionSource } {
  if (config.mode === 'embedded')
    return { authority: new GrantsAuthority(db), selections: new TableRunSelections(db) };
  if (config.projectsUrl === undefined || config.runSelectionUrl === undefined) {
    throw new Error('SANDLOT_PROJECTS_URL and SANDLOT_RUN_SELECTION_URL are required in production mode');
  }
  return {
    authority: new HttpProjectsAuthority(config.projectsUrl),
    selections: new HttpRunSelections(config.runSelectionUrl),
  };
}

export async function composeSandlot(config: Config, logger: Logger): Promise<Sandlot> {
  const db = await openDatabase(config);
  try {
    if (config.migrateOnStart) {
      await migrate(db, { onApplied: (name) => logger.info({ migration: name }, 'migration applied') });
    }
    const runtime = new ActorRuntime<EnvironmentEvent>({ db, definition: environmentDefinition });
    const lifecycle = new LifecycleService({ db, runtime, ...portsFor(config, db) });
    const app = createApp({
      db,
      lifecycle,
      verifier: await verifierFor(config),
      logger,
      provider: simulatedIdentity(config.provider.optionsRevision),
      embedded: config.mode === 'embedded',
    });
    return { db, app, close: () => db.close() };
  } catch (error) {
    await db.close();
    throw error;
  }
}
