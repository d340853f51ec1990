-- ndd-admin schema, version 2: the audit log queried by object, actor and time range
-- (GET /api/v1/audit?object_id=&who=&since=&until=) answers from an index at any size.
-- Every listing is newest first (ORDER BY id DESC), so each index ends in id: a query on one
-- column walks that index backwards and stops after `limit` rows.

-- By object id alone (audit_object of version 1 needs the kind too).
CREATE INDEX audit_object_id ON audit (object_id, id);
-- By actor (the token name that made the change).
CREATE INDEX audit_who ON audit (who, id);
-- By time range.
CREATE INDEX audit_at ON audit (at, id);
