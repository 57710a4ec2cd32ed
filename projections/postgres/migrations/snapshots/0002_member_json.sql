-- Each member's part of its owner's snapshot document, kept on the member's
-- row (issue 11 sixth round). The refresh rebuilt every live member's JSON
-- on every users-family write that touched the owner (json_build_object
-- costs about 16 µs per member, most of a refresh for a family of 20); now
-- the statement that writes a member (projections/postgres upsertMember)
-- builds its JSON once, and a refresh concatenates the parts. The bytes of
-- a document do not change: json_agg separates its elements with ', ' and
-- json_build_object writes '{"k" : v, ...}', as the view below spells out.

-- snapshot_member_json is a member's JSON in a document, as 0001's view
-- built it inline; upsertMember builds the same object from its parameters.
CREATE FUNCTION snapshot_member_json(m family_members) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'id', m.member_id, 'au', m.app_user_id, 'ag', m.app_group_id, 'fg', m.family_group_id,
        'n', m.name, 'r', m.relationship, 'g', m.gender, 'b', m.birth_date, 'p', m.phone,
        'it', m.id_type, 'in', m.id_number, 'h', m.height, 'w', m.weight, 'bt', m.blood_type,
        'd', m.is_default,
        't', (extract(epoch FROM m.updated_at) * 1000000)::bigint)::text
$$;

-- NULL until a writer that knows the column writes the row. snapshot_json_at
-- is the updated_at the part was built for: a writer older than the part
-- (a node not yet upgraded, in a rolling upgrade) changes the row and its
-- updated_at but not the part, and the view then builds it from the row.
ALTER TABLE family_members ADD COLUMN snapshot_json text, ADD COLUMN snapshot_json_at timestamptz;
UPDATE family_members m SET snapshot_json = snapshot_member_json(m), snapshot_json_at = m.updated_at WHERE NOT m.deleted;

-- The same document as 0001's view: its members part concatenated from
-- snapshot_json (built from the row where a row has none, or one built for
-- another updated_at), the outer
-- object concatenated rather than built by json_build_object, which would
-- parse the members' text again.
CREATE OR REPLACE VIEW user_snapshot_docs AS
SELECT u.open_user_id, u.app_id, u.channel_user_id,
    convert_to('{"u" : ' || json_build_object(
            'n', u.name, 'k', u.nickname, 'g', u.gender, 'a', u.avatar, 'p', u.phone, 'e', u.email,
            'b', u.birth_date, 's', u.status,
            'r', (extract(epoch FROM u.registered_at) * 1000000)::bigint,
            't', (extract(epoch FROM u.updated_at) * 1000000)::bigint)::text
        || ', "g" : ' || coalesce((SELECT json_agg(json_build_object(
                'id', g.family_group_id, 'ag', g.app_group_id, 'n', g.name,
                'c', (SELECT count(*) FROM family_members m
                      WHERE m.family_group_id = g.family_group_id AND NOT m.deleted),
                'cr', (extract(epoch FROM g.created_at) * 1000000)::bigint,
                't', (extract(epoch FROM g.updated_at) * 1000000)::bigint) ORDER BY g.family_group_id)
            FROM family_groups g
            WHERE g.open_user_id = u.open_user_id AND g.app_id = u.app_id AND NOT g.dissolved)::text, '[]')
        || ', "m" : ' || coalesce((SELECT '[' || string_agg(coalesce(CASE WHEN m.snapshot_json_at = m.updated_at THEN m.snapshot_json END, snapshot_member_json(m)), ', ' ORDER BY m.member_id) || ']'
            FROM family_members m
            WHERE m.open_user_id = u.open_user_id AND m.app_id = u.app_id AND NOT m.deleted), '[]')
        || '}', 'UTF8') AS doc
FROM users u;
