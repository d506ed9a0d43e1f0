/** Who is calling: resolved once per request by the auth middleware, never from request bodies. */
export interface Principal {
  tenantId: string;
  subject: string;
  /** Operators may act across tenants; everything else is scoped to `tenantId`. */
  operator: boolean;
  /**
   * A run-bound token's exact project and run (claims `project` and `run`, both or neither): what
   * run-bound internal routes require. Absent on an ordinary user token.
   */
  runBinding?: RunBinding;
}

export interface RunBinding {
  projectId: string;
  runId: string;
}

/** Tenant ids end up in URLs, labels and log lines, so they are kept to a conservative alphabet. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
