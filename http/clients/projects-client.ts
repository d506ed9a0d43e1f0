// Production Projects authority: asks the external Projects service on every check (no cache, so
// a revoked grant takes effect on the next request), over the client's pool of kept-alive connections.
import { z } from 'zod';
import { permissions, type Caller, type Permission, type ProjectsAuthority } from '../../actors/ports.ts';
import { JsonClient, UpstreamError, type JsonClientOptions } from './fetch-json.ts';

const answer = z.object({ permissions: z.array(z.string()) });

export class HttpProjectsAuthority implements ProjectsAuthority {
  readonly #client: JsonClient;
  readonly #base: URL;

  constructor(baseUrl: string, timeoutMs = 5_000, pool: Omit<JsonClientOptions, 'timeoutMs'> = {}) {
    this.#base = new URL(withSlash(baseUrl));
    this.#client = new JsonClient('Projects', { timeoutMs, ...pool });
  }

  /** Closes its pooled connections. */
  close(): void {
    this.#client.close();
  }

  async permissions(caller: Caller, projectId: string): Promise<ReadonlySet<Permission>> {
    const path = [
      'tenants',
      caller.tenantId,
      'projects',
      projectId,
      'subjects',
      caller.subject,
      'permissions',
    ]
      .map(encodeURIComponent)
      .join('/');
    const result = await this.#client.get(new URL(path, this.#base));
    if (result.status === 404) return new Set();
    const parsed = answer.safeParse(result.body);
    if (!parsed.success) throw new UpstreamError('Projects', 'unexpected response shape');
    const known = new Set<string>(permissions);
    return new Set(parsed.data.permissions.filter((p): p is Permission => known.has(p)));
  }
}

export function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
