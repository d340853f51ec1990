-- ndd-admin schema, version 1. Applied inside one transaction by admin_db.c; the search_path
-- is the admin's schema (--db-schema), so no object here names a schema.

-- Configuration objects of every kind (feed, filter, source, correlation). The body is the
-- client's object without the server-managed fields, which live in their own columns.
CREATE TABLE objects (
    kind        text        NOT NULL CHECK (kind IN ('feed', 'filter', 'source', 'correlation')),
    id          text        NOT NULL,
    name        text        NOT NULL,
    version     bigint      NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    body        jsonb       NOT NULL,
    PRIMARY KEY (kind, id),
    UNIQUE (kind, name)
);
-- Feeds that reference a filter by name: checked when a filter is renamed or deleted.
CREATE INDEX objects_feed_filter ON objects ((body ->> 'filter')) WHERE kind = 'feed';

-- One row per change, written in the same transaction as the change itself.
CREATE TABLE audit (
    id         bigserial   PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    who        text        NOT NULL,
    action     text        NOT NULL CHECK (action IN ('create', 'replace', 'patch', 'delete')),
    kind       text        NOT NULL,
    object_id  text        NOT NULL,
    before     jsonb,
    after      jsonb
);
CREATE INDEX audit_object ON audit (kind, object_id, id);

-- API tokens: only a salted SHA-256 of the secret is kept.
CREATE TABLE api_tokens (
    id          text        PRIMARY KEY,
    name        text        NOT NULL UNIQUE,
    role        text        NOT NULL CHECK (role IN ('admin', 'viewer')),
    salt        text        NOT NULL,
    hash        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Alarms raised by workers (ndd.events) or by the admin itself (missing heartbeats).
CREATE TABLE alarms (
    id          bigserial   PRIMARY KEY,
    type        text        NOT NULL,
    resource    text        NOT NULL,
    severity    text        NOT NULL CHECK (severity IN ('critical', 'major', 'minor', 'warning')),
    state       text        NOT NULL CHECK (state IN ('active', 'cleared')),
    text        text        NOT NULL DEFAULT '',
    raised_at   timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    cleared_at  timestamptz,
    acked_at    timestamptz,
    acked_by    text,
    count       bigint      NOT NULL DEFAULT 1
);
-- At most one active alarm per (type, resource): a repeated raise counts instead.
CREATE UNIQUE INDEX alarms_active ON alarms (type, resource) WHERE state = 'active';
CREATE INDEX alarms_state ON alarms (state, id);
