-- The AcceptedBuildTestProfile a lease accepted (docs/build-test.md#configuration): the whole profile
-- document in effect when the lease was reserved, written with the lease row and never updated, so
-- a changed profile file affects new leases only. BuildTest on the lease checks commands against it
-- and runs its Pods under it. Null: no profile was configured then (or the lease is older than this
-- column), and BuildTest is refused on that lease.
ALTER TABLE sandbox_leases ADD COLUMN build_test_profile jsonb;
