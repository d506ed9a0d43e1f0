// The same services behind two apps, for admin-route tests: one in embedded mode (admin routes
// mounted) and one in production mode (none), both verifying HS256 tokens signed with `key`.
import { createApp } from '../../http/app.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { createLogger } from '../../lib/logger.ts';
import type { Database } from '../../store/db.ts';
import { audience, issuer, type Harness } from './harness.ts';

export function embeddedAndProductionApps(db: Database, h: Harness, key: Uint8Array) {
  const deps = {
    db,
    services: h.services,
    verifier: createTokenVerifier({ kind: 'hs256', key, issuer, audience }),
    logger: createLogger({ level: 'silent' }),
    provider: h.provider.identity,
  };
  return { app: createApp({ ...deps, embedded: true }), production: createApp({ ...deps, embedded: false }) };
}
