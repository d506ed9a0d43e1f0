-- Where each journaled event came from (actors/runtime.ts CommitContext.source): an API request
-- (`http`), an attempt runner step (`worker`), the reconciler, the observer, a provider report, or
-- the runtime itself (`system`). Rows written before this column existed keep NULL: their source
-- was never recorded, and guessing it from the actor would be wrong for some of them.
ALTER TABLE environment_journal
  ADD COLUMN source text
    CHECK (source IN ('http', 'worker', 'reconciler', 'observer', 'provider', 'system'));
