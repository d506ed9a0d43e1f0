-- A flush the Host refused flushed nothing and advanced nothing, so it must not hold its volume
-- transition: Core's next suspend operation may flush the same transition revision. One flush per
-- exact volume transition now counts only flushes that are not Refused (Reserved, Uncertain or
-- Verified; the machine keeps at most one open per Environment).
ALTER TABLE workspace_flushes DROP CONSTRAINT workspace_flushes_volume_id_transition_revision_key;
CREATE UNIQUE INDEX workspace_flushes_one_per_transition ON workspace_flushes (volume_id, transition_revision)
  WHERE state <> 'Refused';
