// The provider contract, unchanged, against the sandbox-host provider: two reference hosts started
// here (certificates made at start, connecting from 127.0.0.2 and 127.0.0.3) poll the mutual-TLS
// control listener on 127.0.0.1, and every provider call is a signed assignment answered by a
// host-signed result. A lost response is the provider dropping the answer after the host applied
// the change; the renew case reads the term from the host's own record, and the configured case
// has the reference guest report its configuration (the hosts' guests are declared `on-report`).
import { isolatedPostgres } from '../support/databases.ts';
import { startHostFleet } from '../support/sandbox-host-fleet.ts';
import { defineProviderContract } from './provider-contract.ts';

defineProviderContract('sandbox-host with two reference hosts', async () => {
  const pg = await isolatedPostgres();
  const db = pg.open();
  const fleet = await startHostFleet({ db, hosts: 2 });
  const hostOf = (resourceId: string) => fleet.hosts.find((h) => resourceId.startsWith(`${h.hostId}/`));
  return {
    provider: fleet.provider,
    faults: { loseNextResponse: (operation) => fleet.provider.loseNextResponse(operation) },
    waitForPhase: { timeoutMs: 10_000, intervalMs: 10 },
    configureGuest: async (resource) => {
      const host = hostOf(resource.resourceId);
      if (host === undefined) throw new Error(`no host for ${resource.resourceId}`);
      await host.configureGuest(resource.owner);
    },
    recordedTerm: async (resource) => {
      const term = await hostOf(resource.resourceId)?.recordedExpiry(resource.owner);
      if (term === undefined) throw new Error(`no record for ${resource.resourceId}`);
      return term;
    },
    async close() {
      await fleet.close();
      await db.close();
      await pg.drop();
    },
  };
});
