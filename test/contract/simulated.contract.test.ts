import { migrate } from '../../store/migrate.ts';
import { backends, openBackend } from '../support/databases.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import { defineProviderContract } from './provider-contract.ts';

for (const backend of backends) {
  defineProviderContract(`simulated on ${backend}`, async () => {
    const handle = await openBackend(backend);
    await migrate(handle.db);
    await migrateSimulated(handle.db);
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'contract-r1' });
    return {
      provider,
      faults: { loseNextResponse: (operation) => provider.injectFault(operation, 'lost-response') },
      recordedTerm: (resource) => provider.recordedExpiry(resource.resourceId),
      async close() {
        await provider.close();
        await handle.close();
      },
    };
  });
}
