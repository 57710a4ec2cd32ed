-- Health reports, and the phone lookup that binds plugin measurements to users.
--
-- interpretation_detail and raw_data are bytea, not json or jsonb: the pull
-- must return the bytes the reporting side sent, and json/jsonb would
-- rewrite key order, whitespace, numbers or escapes. NULL is JSON null.
CREATE TABLE reports (
    report_id                 bigint      PRIMARY KEY,
    app_id                    bigint      NOT NULL,
    open_user_id              bigint      NOT NULL,
    open_member_id            bigint,
    request_report_id         text,
    measurement_no            text,
    device_sn                 text,
    report_type               text,
    file_path                 text,
    interpretation_result     text,
    interpretation_detail     bytea,
    interpretation_method     text,
    is_viewed                 boolean     NOT NULL,
    uploaded_at               timestamptz NOT NULL,
    examined_at               timestamptz,
    interpreted_at            timestamptz,
    points_code               text,
    data_source               text,
    operator_name             text,
    operator_platform_user_id bigint,
    raw_data                  bytea,
    day                       text        NOT NULL,
    updated_at                timestamptz NOT NULL
);
-- ReportsOfDay(appID, openUserID, day): report_id last, so the rows come in
-- the order returned without a sort.
CREATE INDEX reports_user_day_idx ON reports (app_id, open_user_id, day, report_id);

-- UserByPhone(appID, phone): open_user_id last, so the lowest id is the
-- first entry. Users without a phone are never looked up by it.
CREATE INDEX users_app_phone_idx ON users (app_id, phone, open_user_id) WHERE phone IS NOT NULL;
