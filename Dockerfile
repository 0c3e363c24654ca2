# syntax=docker/dockerfile:1
#
# The threadengine container image: a static binary (modernc.org/sqlite is
# pure Go, so CGO_ENABLED=0) on distroless "static" (CA certificates and
# time zones, no shell), run as the distroless nonroot user.
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg COMMIT="$(git rev-parse HEAD)" -t threadengine:v1.2.3 .
#
# deploy/docker_test.go builds the binary with exactly the flags of the
# RUN go build line below (it parses this file) and runs its version and
# healthcheck commands, and lints this file; keep the build on one RUN line.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/threadengine ./cmd/threadengine
# The working directory of the final stage, owned by the nonroot user: the
# embedded SQLite database and generated keys go to its ./data.
RUN mkdir -p /out/var/lib/threadengine/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/threadengine /usr/local/bin/threadengine
COPY --from=build --chown=65532:65532 /out/var/lib/threadengine /var/lib/threadengine
WORKDIR /var/lib/threadengine
USER 65532:65532
# Listen on every interface inside the container; everything else is
# configured with THREADENGINE_* variables (docs/operators/configuration.md).
ENV THREADENGINE_SERVER__LISTEN=0.0.0.0:8081
EXPOSE 8081
VOLUME ["/var/lib/threadengine/data"]
# No curl in the image: the binary probes its own /readyz (503 while the
# database is unreachable or the schema compatibility gate refuses it).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/usr/local/bin/threadengine", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/threadengine"]
CMD ["serve"]
