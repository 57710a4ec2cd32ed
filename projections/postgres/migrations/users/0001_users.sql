-- Channel users.

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
