-- The W3C trace context (`traceparent`) of the transition that wrote an outbox row, when tracing is
-- on: the relay re-publishes it with the job, so the worker's spans join the request's trace even
-- after a restart or a lost queue (lib/tracing.ts). Null when no trace was active.
ALTER TABLE outbox ADD COLUMN trace_context text;
