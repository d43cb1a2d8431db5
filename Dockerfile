# syntax=docker/dockerfile:1
# Gatehouse: the server binary (cgo for SQLite) and the static command hook
# (gatehouse-hook) on a small non-root image.
#   docker build -t gatehouse .
#   docker run -p 8080:8080 -v gatehouse-data:/data \
#     -v $PWD/gatehouse.yaml:/etc/gatehouse/gatehouse.yaml:ro -e GATEHOUSE_TOKEN gatehouse

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo is on for mattn/go-sqlite3; the runtime image has the same glibc.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gatehouse ./cmd/gatehouse
# The lean command hook: no cgo, so it is static and can be copied out of the
# image onto agents' machines (docker cp).
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/gatehouse-hook ./cmd/gatehouse-hook

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 gatehouse \
 && useradd --system --uid 10001 --gid gatehouse --home-dir /data --no-create-home gatehouse \
 && mkdir -p /data /etc/gatehouse \
 && chown gatehouse:gatehouse /data
COPY --from=build /out/gatehouse /out/gatehouse-hook /usr/local/bin/
USER 10001:10001
WORKDIR /data
# The SQLite database (dsn: /data/gatehouse.db) lives here.
VOLUME ["/data"]
EXPOSE 8080
# Mount the config here. It must set listen: 0.0.0.0:8080 to be reachable
# from outside the container, and so must set auth.api_tokens (Gatehouse
# refuses an unauthenticated API off loopback).
ENV GATEHOUSE_CONFIG=/etc/gatehouse/gatehouse.yaml
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/gatehouse"]
CMD ["serve"]
