-- Family groups and their members.
CREATE TABLE family_groups (
    family_group_id bigint      PRIMARY KEY,
    app_id          bigint      NOT NULL,
    open_user_id    bigint      NOT NULL,
    app_group_id    bigint      NOT NULL,
    name            text        NOT NULL,
    dissolved       boolean     NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- Groups(appID, openUserID): the owner's groups in id order.
CREATE INDEX family_groups_open_user_idx ON family_groups (open_user_id, family_group_id);

CREATE TABLE family_members (
    member_id       bigint      PRIMARY KEY,
    app_id          bigint      NOT NULL,
    open_user_id    bigint      NOT NULL,
    app_user_id     text        NOT NULL,
    app_group_id    bigint      NOT NULL,
    family_group_id bigint      NOT NULL,
    name            text        NOT NULL,
    relationship    text        NOT NULL,
    gender          text,
    birth_date      text,
    phone           text,
    id_type         text,
    id_number       text,
    height          bigint,
    weight          bigint,
    blood_type      text,
    is_default      boolean     NOT NULL,
    deleted         boolean     NOT NULL,
    deleted_at      timestamptz,
    updated_at      timestamptz NOT NULL
);
-- Members(appID, openUserID, updatedAfter).
CREATE INDEX family_members_open_user_updated_idx ON family_members (open_user_id, updated_at);
-- The member count of Groups: live members of one group.
CREATE INDEX family_members_live_group_idx ON family_members (family_group_id) WHERE NOT deleted;
