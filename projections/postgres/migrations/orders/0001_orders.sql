-- Goods and purchase orders with their items.
--
-- goods_code and order_code are COLLATE "C": they are only compared for
-- equality, and byte comparison is the cheapest and the one Go's == makes.
CREATE TABLE goods (
    goods_id   bigint           PRIMARY KEY,
    goods_code text COLLATE "C" NOT NULL,
    goods_name text             NOT NULL,
    active     boolean          NOT NULL,
    created_at timestamptz      NOT NULL,
    updated_at timestamptz      NOT NULL,
    CONSTRAINT goods_code_key UNIQUE (goods_code)
);

-- Optional strings are NULL when absent and '' when given empty.
CREATE TABLE orders (
    order_id          bigint           PRIMARY KEY,
    order_code        text COLLATE "C" NOT NULL,
    app_id            bigint           NOT NULL,
    third_order_id    text             NOT NULL,
    user_id           bigint,
    contact_person    text             NOT NULL,
    contact_phone     text             NOT NULL,
    address           text             NOT NULL,
    area_code         text,
    area_text         text,
    logistics_type    text             NOT NULL,
    postage_policy    text             NOT NULL,
    postage_amount    bigint           NOT NULL,
    status            text             NOT NULL,
    order_source      text             NOT NULL,
    cooperation_type  text             NOT NULL,
    order_time        timestamptz      NOT NULL,
    reject_reason     text,
    logistics_company text,
    tracking_number   text,
    shipped_at        timestamptz,
    created_at        timestamptz      NOT NULL,
    updated_at        timestamptz      NOT NULL,
    -- OrderByCode.
    CONSTRAINT orders_code_key UNIQUE (order_code)
);
-- Orders(AppID, After): a partner's orders in id order.
CREATE INDEX orders_app_idx ON orders (app_id, order_id);
-- Orders(Status, After): operators' queues across apps.
CREATE INDEX orders_status_idx ON orders (status, order_id);
-- Orders(AppID, Status, After): a partner's orders in one status, without
-- walking its orders in every other status.
CREATE INDEX orders_app_status_idx ON orders (app_id, status, order_id);

-- Items are keyed within their order: PutOrder deletes the order's items and
-- inserts the new set, and the primary key reads them in ItemID order. No
-- foreign key to orders: the projector writes both in one transaction, and
-- Reset truncates both together. device_sns is never NULL ('{}' when none).
CREATE TABLE order_items (
    order_id        bigint  NOT NULL,
    item_id         bigint  NOT NULL,
    goods_id        bigint  NOT NULL,
    goods_code      text    NOT NULL,
    goods_name      text    NOT NULL,
    quantity        bigint  NOT NULL,
    unit_price      bigint  NOT NULL,
    total_price     bigint  NOT NULL,
    shipping_status text    NOT NULL,
    device_sns      text[]  NOT NULL,
    PRIMARY KEY (order_id, item_id)
);
