module github.com/healthtech/partner-open-platform

go 1.26.8

require (
	github.com/EventStore/EventStore-Client-Go/v4 v4.2.0 // indirect
	github.com/getkin/kin-openapi v0.152.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/pierrec/lz4/v4 v4.1.15 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/segmentio/kafka-go v0.4.51 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
