-- The report pull floor: what one pull must write and read, in one
-- transaction, with no platform around it. Use the request's nonce (a
-- replay guard row), take a token from the app's shared bucket, read the
-- report with the head of the report events, and append the pull's audit
-- fact to the log as the event store appends (the append lock, the head,
-- the stream's next revision, the row, the wake-up), all committed before
-- the answer.
\set r random(1, 2000)
BEGIN;
INSERT INTO floor_nonces (scope, nonce, expires_at) VALUES ('h:1', md5(random()::text || :client_id), now() + interval '15 minutes')
    ON CONFLICT (scope, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE floor_nonces.expires_at <= now();
INSERT INTO floor_buckets AS b (name, key, tokens, granted, at) VALUES ('report_pull', '1', 1e9 - 1, 1, clock_timestamp())
    ON CONFLICT (name, key) DO UPDATE SET tokens = least(1e9, b.tokens + extract(epoch FROM EXCLUDED.at - b.at) * 1e6) - 1, granted = 1,
        at = greatest(b.at, EXCLUDED.at)
    RETURNING tokens, granted;
SELECT r.*, (SELECT max(position) FROM floor_events WHERE type = 'report.created') FROM floor_reports r WHERE r.report_id = :r AND r.app_id = 1;
SELECT pg_advisory_xact_lock(1);
INSERT INTO floor_events (position, stream, revision, id, type, data, meta)
SELECT (SELECT coalesce(max(position), 0) + 1 FROM floor_events), 'audit-app:1',
    (SELECT coalesce(max(revision) + 1, 0) FROM floor_events WHERE stream = 'audit-app:1'), gen_random_uuid()::text, 'audit.access_recorded',
    convert_to('{"actor":"app:1","action":"report.pull","app_id":1,"report_id":' || :r || ',"subjects":["report-' || :r || '","user-' || (100000 + :r) || '","app-1"],"at":"' || now() || '"}', 'UTF8'),
    '\x7b22617070223a317d';
SELECT pg_notify('floor_events', '');
COMMIT;
