// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
};

export type WorkspaceFlush = {
  flushOperationId: string;
  operationId: string;
  stepId: string;
  volumeId: string;
  state: "Reserved" | "Uncertain" | "Verified" | "Refused";
  lease: {
    operationId: string;
    resourceGeneration: number;
    providerFence: number;
  };
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
  deliveries: number;
  receipt: {
    [key: string]: unknown;
  } | null;
  hostReceiptSha256: string | null;
  reservedAt: string;
  settledAt: string | null;
};
