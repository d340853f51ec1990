-- ndd-admin schema, version 3: the audit log also records who created and revoked API tokens
-- (kind 'token', actions 'create' and 'revoke'; never a salt or hash) and who acknowledged an
-- alarm (kind 'alarm', action 'ack'), each in the same statement as the change.
ALTER TABLE audit DROP CONSTRAINT audit_action_check;
ALTER TABLE audit ADD CONSTRAINT audit_action_check
    CHECK (action IN ('create', 'replace', 'patch', 'delete', 'revoke', 'ack'));
