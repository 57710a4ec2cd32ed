-- One row per user holding its whole snapshot (the user, its live groups
-- with their live member counts, its live members) as one JSON document, so
-- that a snapshot read is one primary-key (or channel-id) lookup instead of
-- three queries (issue 11, item 3). The users family keeps it in the same
-- transaction as its rows and its checkpoint (projections/postgres.tx
-- refreshes each touched user from user_snapshot_docs before the
-- checkpoint), so the document is never older than the checkpoint read with
-- it. It holds exactly the fields the users, family_groups and
-- family_members columns hold, no more; erasure deletes it with them.
--
-- Times are microseconds since the Unix epoch (exact for timestamptz, and
-- independent of the session's time zone).
CREATE VIEW user_snapshot_docs AS
SELECT u.open_user_id, u.app_id, u.channel_user_id,
    convert_to(json_build_object(
        'u', json_build_object(
            'n', u.name, 'k', u.nickname, 'g', u.gender, 'a', u.avatar, 'p', u.phone, 'e', u.email,
            'b', u.birth_date, 's', u.status,
            'r', (extract(epoch FROM u.registered_at) * 1000000)::bigint,
            't', (extract(epoch FROM u.updated_at) * 1000000)::bigint),
        'g', coalesce((SELECT json_agg(json_build_object(
                'id', g.family_group_id, 'ag', g.app_group_id, 'n', g.name,
                'c', (SELECT count(*) FROM family_members m
                      WHERE m.family_group_id = g.family_group_id AND NOT m.deleted),
                'cr', (extract(epoch FROM g.created_at) * 1000000)::bigint,
                't', (extract(epoch FROM g.updated_at) * 1000000)::bigint) ORDER BY g.family_group_id)
            FROM family_groups g
            WHERE g.open_user_id = u.open_user_id AND g.app_id = u.app_id AND NOT g.dissolved), '[]'::json),
        'm', coalesce((SELECT json_agg(json_build_object(
                'id', m.member_id, 'au', m.app_user_id, 'ag', m.app_group_id, 'fg', m.family_group_id,
                'n', m.name, 'r', m.relationship, 'g', m.gender, 'b', m.birth_date, 'p', m.phone,
                'it', m.id_type, 'in', m.id_number, 'h', m.height, 'w', m.weight, 'bt', m.blood_type,
                'd', m.is_default,
                't', (extract(epoch FROM m.updated_at) * 1000000)::bigint) ORDER BY m.member_id)
            FROM family_members m
            WHERE m.open_user_id = u.open_user_id AND m.app_id = u.app_id AND NOT m.deleted), '[]'::json)
    )::text, 'UTF8') AS doc
FROM users u;

CREATE TABLE user_snapshots (
    open_user_id    bigint PRIMARY KEY,
    app_id          bigint NOT NULL,
    channel_user_id text   NOT NULL,
    doc             bytea  NOT NULL
);
-- The snapshot by the partner's own id, in one index lookup.
CREATE UNIQUE INDEX user_snapshots_app_channel_key ON user_snapshots (app_id, channel_user_id);

-- Backfill: a database written before this migration serves its existing
-- users' snapshots at once, at the checkpoint it already has.
INSERT INTO user_snapshots (open_user_id, app_id, channel_user_id, doc)
SELECT open_user_id, app_id, channel_user_id, doc FROM user_snapshot_docs;
