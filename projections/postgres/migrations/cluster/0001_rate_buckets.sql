-- Token buckets of the rate limits every node shares (internal/ratelimit/postgres):
-- one row per limit and key (an app), updated by one statement per decision.
-- Not derived from events: Reset leaves them.
CREATE TABLE rate_buckets (
    name   text COLLATE "C" NOT NULL,  -- which limit: report_pull, scheme_m
    key    text COLLATE "C" NOT NULL,
    tokens double precision NOT NULL,  -- tokens left at "at"
    granted integer         NOT NULL,  -- tokens the last decision granted (what it returns)
    at     timestamptz      NOT NULL,  -- when tokens was computed
    PRIMARY KEY (name, key)
);
