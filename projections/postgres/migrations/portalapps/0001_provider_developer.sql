-- The portal developer who registered a service provider (0: registered
-- through the partner API), so the developer portal lists a developer's
-- own providers and nobody else's.
ALTER TABLE service_providers ADD COLUMN developer_id bigint NOT NULL DEFAULT 0;
-- The operator's words with the review decision, shown to the developer.
ALTER TABLE service_providers ADD COLUMN review_notes text NOT NULL DEFAULT '';
-- DeveloperProviders(developerID): a developer's providers in id order.
CREATE INDEX service_providers_developer_idx ON service_providers (developer_id, provider_id);
