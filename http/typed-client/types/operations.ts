// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export interface OperationsPaths {
  "/healthz": {
    /** Liveness: the process answers */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: {
          status: "ok";
        };
      };
    };
  };
  "/internal/provider-lifecycle/reports": {
    /** Provider lifecycle reports (closed until their admissions exist) */
    post: {
      path: never;
      query: never;
      body: never;
      responses: {
        503: Problem;
      };
    };
  };
  "/metrics": {
    /** Prometheus metrics (on the metrics listener, not the API port) */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: string;
      };
    };
  };
  "/readyz": {
    /** Readiness: the database answers */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: {
          status: "ready";
        };
        503: Problem;
      };
    };
  };
}
