# syntax=docker/dockerfile:1

# Build both binaries statically on the build machine's platform, for the
# target's OS and architecture.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/platform ./cmd/platform && \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/platformctl ./cmd/platformctl && \
    mkdir -p /out/data

# Runtime: distroless static (CA certificates, no shell; the binary embeds the
# time zone database), running as the distroless nonroot user (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/platform /out/platformctl /usr/local/bin/
# A named volume mounted on /data starts with this directory's owner.
COPY --from=build --chown=65532:65532 /out/data /data
ENV PLATFORM_ADDR=0.0.0.0:8080 \
    PLATFORM_DATA_DIR=/data
USER 65532:65532
WORKDIR /data
EXPOSE 8080
VOLUME /data
ENTRYPOINT ["/usr/local/bin/platform"]
