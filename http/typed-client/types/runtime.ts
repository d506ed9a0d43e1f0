// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export type EnvironmentRuntimeWorkspaceContext = {
  environmentId: string;
  profileId: string;
  lease: {
    operationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
    resourceId: string;
  };
  workspace: {
    volumeId: string;
    state: "Attached";
    transitionRevision: number;
    resourceGeneration: number;
    dataGeneration: number;
    storage: {
      providerId: string;
      pvc: {
        namespace: string;
        name: string;
        uid: string;
      };
    };
    mount: {
      path: string;
      readOnly: boolean;
    };
  };
  networkPolicyGeneration: number;
};

export type ResolvedRuntimeProfile = (RuntimeProfileMapping) & ({
  replayed: boolean;
});

export type RuntimeProfileMapping = {
  profileId: string;
  sourceProfileId: string;
  environmentId: string;
  endpoint: string;
  configureUrl: string;
  audience: string;
  placement: {
    resourceId: string;
    operationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
    podUid: string;
    podIp: string;
    serverName: string;
    port: number;
  };
  pins: {
    actor: string;
    selectionHash: string;
    sourceConfigurationHash: string;
    profileHash: string;
  };
  profile: {
    [key: string]: unknown;
  };
  createdAt: string;
};

export interface RuntimePaths {
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}": {
    /** A resolved runtime profile, while its actor, selection, source configuration and endpoint still match */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: RuntimeProfileMapping;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}/resolve": {
    /** Resolve a source runtime profile to an endpoint-bound copy for the current sandbox (run-bound token) */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: ResolvedRuntimeProfile;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        503: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}/workspace": {
    /** The Workspace a resolved runtime profile's sandbox mounts, read with its lease under the owner lock */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: EnvironmentRuntimeWorkspaceContext;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
}
