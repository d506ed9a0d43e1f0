import { z } from 'zod';
import type { RunSelection, RunSelectionSource } from '../../actors/ports.ts';
import { selectionHash } from '../../store/run-selections.ts';
import { UpstreamError, getJson } from './fetch-json.ts';
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

/** Production run selection: the external service owns the immutable candidates of each run. */
export class HttpRunSelections implements RunSelectionSource {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs = 5_000,
  ) {}

  async get(tenantId: string, projectId: string, runId: string): Promise<RunSelection | null> {
    const path = ['tenants', tenantId, 'projects', projectId, 'runs', runId, 'selection']
      .map(encodeURIComponent)
      .join('/');
    const result = await getJson('Run selection', new URL(path, withSlash(this.baseUrl)), this.timeoutMs);
    if (result.status === 404) return null;
    const parsed = answer.safeParse(result.body);
    if (!parsed.success) throw new UpstreamError('Run selection', 'unexpected response shape');
    const { candidates } = parsed.data;
    return { tenantId, projectId, runId, candidates, selectionHash: selectionHash(candidates) };
  }
}
