-- Benefit items, service providers, benefit cards with their items, and
-- fulfillment records.
--
-- card_number is COLLATE "C": it is only compared for equality, and byte
-- comparison is the cheapest and the one Go's == makes.
CREATE TABLE benefit_items (
    benefit_item_id bigint      PRIMARY KEY,
    name            text        NOT NULL,
    status          text        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- allowed_item_ids is the ascending set of benefit item ids, never NULL.
CREATE TABLE service_providers (
    provider_id      bigint      PRIMARY KEY,
    app_id           bigint      NOT NULL,
    name             text        NOT NULL,
    type             text        NOT NULL,
    contact          text        NOT NULL,
    points_code      text,
    status           text        NOT NULL,
    allowed_item_ids bigint[]    NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
-- Providers(appID): an app's providers in id order.
CREATE INDEX service_providers_app_idx ON service_providers (app_id, provider_id);

CREATE TABLE cards (
    card_number   text COLLATE "C" PRIMARY KEY,
    issuer_app_id bigint           NOT NULL,
    holder_name   text             NOT NULL,
    holder_phone  text,
    expires_at    timestamptz      NOT NULL,
    created_at    timestamptz      NOT NULL,
    updated_at    timestamptz      NOT NULL
);

-- A user benefit item belongs to one card at most: the primary key makes a
-- second card claiming it a write error. No foreign key to cards: PutCard
-- writes both in one transaction, and Reset truncates both together.
CREATE TABLE card_items (
    user_benefit_item_id bigint           PRIMARY KEY,
    card_number          text COLLATE "C" NOT NULL,
    benefit_item_id      bigint           NOT NULL,
    total                bigint           NOT NULL,
    remaining            bigint           NOT NULL
);
-- A card's items in UserBenefitItemID order, and PutCard's delete of them.
CREATE INDEX card_items_card_idx ON card_items (card_number, user_benefit_item_id);

-- rating is bigint, not integer, so that every Go int round-trips here as
-- it does in the memory store.
CREATE TABLE fulfillments (
    record_id            bigint           PRIMARY KEY,
    card_number          text COLLATE "C" NOT NULL,
    issuer_app_id        bigint           NOT NULL,
    user_benefit_item_id bigint           NOT NULL,
    benefit_item_id      bigint           NOT NULL,
    benefit_item_name    text             NOT NULL,
    provider_id          bigint           NOT NULL,
    provider_app_id      bigint           NOT NULL,
    quantity             bigint           NOT NULL,
    status               text             NOT NULL,
    points_code          text,
    remark               text,
    initiated_at         timestamptz      NOT NULL,
    rating               bigint,
    updated_at           timestamptz      NOT NULL
);
-- Fulfillments by ProviderID, IssuerAppID or CardNumber, each in record id
-- order from After; other filters given with one of them filter its range.
CREATE INDEX fulfillments_provider_idx ON fulfillments (provider_id, record_id);
CREATE INDEX fulfillments_issuer_idx ON fulfillments (issuer_app_id, record_id);
CREATE INDEX fulfillments_card_idx ON fulfillments (card_number, record_id);
