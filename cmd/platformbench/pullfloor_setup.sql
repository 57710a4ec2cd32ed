-- The report pull floor's tables, in the pgbench database: the shapes of
-- the platform's nonces, rate_buckets, reports and es_events (with their
-- keys and indexes), and 2,000 reports of app 1 with raw data as the
-- benchmark uploads it.
DROP TABLE IF EXISTS floor_nonces, floor_buckets, floor_reports, floor_events;
CREATE TABLE floor_nonces (scope text NOT NULL, nonce text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (scope, nonce));
CREATE TABLE floor_buckets (name text NOT NULL, key text NOT NULL, tokens float8 NOT NULL, granted int NOT NULL, at timestamptz NOT NULL,
    PRIMARY KEY (name, key));
CREATE TABLE floor_reports (report_id bigint PRIMARY KEY, app_id bigint NOT NULL, open_user_id bigint NOT NULL, report_type text,
    is_viewed boolean NOT NULL, uploaded_at timestamptz NOT NULL, raw_data jsonb, updated_at timestamptz NOT NULL);
CREATE TABLE floor_events (position bigint PRIMARY KEY, stream text NOT NULL, revision bigint NOT NULL, id text NOT NULL UNIQUE,
    type text NOT NULL, data bytea NOT NULL, meta bytea, created timestamptz NOT NULL DEFAULT now(), UNIQUE (stream, revision));
CREATE INDEX floor_events_type_position ON floor_events (type, position);
INSERT INTO floor_reports
SELECT g, 1, 100000 + g, 'BLOOD_PRESSURE', true, now(),
    '{"data_source":"station","data_type":"indicators","indicators":[{"code":"SBP","value":118,"unit":"mmHg"},{"code":"DBP","value":76,"unit":"mmHg"},{"code":"HR","value":72,"unit":"bpm"}]}',
    now()
FROM generate_series(1, 2000) g;
INSERT INTO floor_events (position, stream, revision, id, type, data)
SELECT g, 'report-' || g, 0, 'seed-' || g, 'report.created', '{}' FROM generate_series(1, 2000) g;
ANALYZE;
