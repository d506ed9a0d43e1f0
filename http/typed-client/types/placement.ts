// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export type PlacementProjection = {
  version: "v1";
  tenantId: string;
  projectId: string;
  runId: string;
  environmentId: string;
  lifecycleGeneration: number;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  lease: {
    revision: number;
    state: "Active";
    current: true;
    expiresAt: string | null;
    updatedAt: string;
  };
  resource: {
    resourceId: string;
    endpoint: string | null;
    placement: {
      [key: string]: string;
    };
  };
  providerPin: {
    providerId: string;
    adapterVersion: string;
    optionsSchemaVersion: number;
    optionsRevision: string;
    resourceId: string;
    resourceGeneration: number;
    capabilities: Array<string>;
  };
};

export interface PlacementPaths {
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/internal/placement": {
    /** The same projection for a run-bound token (fresh ReadRunSelection, exact project/run claims) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: PlacementProjection;
        204: null;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/placement": {
    /** The placement of the exact current, Active, unexpired lease (fresh WriteProjects) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: PlacementProjection;
        204: null;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
}
