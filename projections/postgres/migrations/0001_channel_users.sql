-- Checkpoints and channel users.
--
-- Positions are events.Position (two uint64). They are stored in bigint with
-- the bits of the uint64 reinterpreted as int64: every uint64 round-trips
-- exactly, values below 2^63 (all of them in practice) read as themselves in
-- psql, and no query orders or compares positions in SQL.
CREATE TABLE checkpoints (
    projection  text        PRIMARY KEY,
    commit_pos  bigint      NOT NULL,
    prepare_pos bigint      NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Optional strings are NULL when absent and '' when given empty. birth_date
-- is text (Y-m-d as the partner sent it), not date, so it round-trips as is.
CREATE TABLE users (
    open_user_id    bigint      PRIMARY KEY,
    app_id          bigint      NOT NULL,
    channel_user_id text        NOT NULL,
    name            text        NOT NULL,
    nickname        text,
    gender          text        NOT NULL,
    avatar          text,
    phone           text,
    email           text,
    birth_date      text,
    status          text        NOT NULL,
    registered_at   timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT users_app_channel_key UNIQUE (app_id, channel_user_id)
);
