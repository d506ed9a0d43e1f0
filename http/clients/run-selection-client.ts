import { z } from 'zod';
import type { RunSelection, RunSelectionSource } from '../../actors/ports.ts';
import { selectionHash } from '../../store/run-selections.ts';
import { JsonClient, UpstreamError, type JsonClientOptions } from './fetch-json.ts';
import { withSlash } from './projects-client.ts';

const candidate = z.object({
  providerId: z.string(),
  adapterVersion: z.string(),
  optionsSchemaVersion: z.number().int(),
  optionsRevision: z.string(),
  hostingPattern: z.string(),
  capabilities: z.array(z.string()),
  exclusive: z.boolean(),
});
const answer = z.object({ candidates: z.array(candidate).min(1) });

/** Production run selection: the external service owns the immutable candidates of each run (pooled client). */
export class HttpRunSelections implements RunSelectionSource {
  readonly #client: JsonClient;
  readonly #base: URL;

  constructor(baseUrl: string, timeoutMs = 5_000, pool: Omit<JsonClientOptions, 'timeoutMs'> = {}) {
    this.#base = new URL(withSlash(baseUrl));
    this.#client = new JsonClient('Run selection', { timeoutMs, ...pool });
  }

  /** Closes its pooled connections. */
  close(): void {
    this.#client.close();
  }

  async get(tenantId: string, projectId: string, runId: string): Promise<RunSelection | null> {
    const path = ['tenants', tenantId, 'projects', projectId, 'runs', runId, 'selection']
      .map(encodeURIComponent)
      .join('/');
    const result = await this.#client.get(new URL(path, this.#base));
    if (result.status === 404) return null;
    const parsed = answer.safeParse(result.body);
    if (!parsed.success) throw new UpstreamError('Run selection', 'unexpected response shape');
    const { candidates } = parsed.data;
    return { tenantId, projectId, runId, candidates, selectionHash: selectionHash(candidates) };
  }
}
