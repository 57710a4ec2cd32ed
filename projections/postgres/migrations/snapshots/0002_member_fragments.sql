-- The members part of a snapshot document, kept per member (issue 11 sixth
-- round). Rebuilding a document from family_members built every live
-- member's JSON again on every users-family write (about 16 µs per member,
-- so most of a refresh for a family of 20); now each member's JSON is built
-- once, by the statement that writes the member (projections/postgres
-- upsertMember and DeleteMember write family_members and this table in one
-- statement), and a refresh only concatenates them. The document's bytes
-- are the same: json_agg separates its elements with ', ' and
-- json_build_object writes '{"k" : v, ...}', as the view below spells out.

-- snapshot_member_json is the one definition of a member's JSON in a
-- document (0001's view built the same object inline).
CREATE FUNCTION snapshot_member_json(m family_members) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'id', m.member_id, 'au', m.app_user_id, 'ag', m.app_group_id, 'fg', m.family_group_id,
        'n', m.name, 'r', m.relationship, 'g', m.gender, 'b', m.birth_date, 'p', m.phone,
        'it', m.id_type, 'in', m.id_number, 'h', m.height, 'w', m.weight, 'bt', m.blood_type,
        'd', m.is_default,
        't', (extract(epoch FROM m.updated_at) * 1000000)::bigint)::text
$$;

-- One row per live member: its JSON, by owner in id order.
CREATE TABLE user_snapshot_members (
    member_id    bigint PRIMARY KEY,
    app_id       bigint NOT NULL,
    open_user_id bigint NOT NULL,
    doc          text   NOT NULL
);
CREATE INDEX user_snapshot_members_owner_idx ON user_snapshot_members (open_user_id, member_id);

INSERT INTO user_snapshot_members (member_id, app_id, open_user_id, doc)
SELECT m.member_id, m.app_id, m.open_user_id, snapshot_member_json(m) FROM family_members m WHERE NOT m.deleted;

-- The same document as 0001's view, its members part concatenated from
-- user_snapshot_members, and the outer object concatenated rather than
-- built by json_build_object (which would parse the members' text again).
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
        || ', "m" : ' || coalesce((SELECT '[' || string_agg(f.doc, ', ' ORDER BY f.member_id) || ']'
            FROM user_snapshot_members f
            WHERE f.open_user_id = u.open_user_id AND f.app_id = u.app_id), '[]')
        || '}', 'UTF8') AS doc
FROM users u;
