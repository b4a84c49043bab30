# syntax=docker/dockerfile:1
#
# sluice's container images, built from the repository root:
#
#   docker build -t sluice .                      # sluice alone: static, ~15 MB
#   docker build --target node -t sluice-node .   # sluice + Node.js: the base
#                                                 # for an SSR renderer image
#
# A renderer's image starts FROM the node target and copies the app in:
#
#   FROM sluice-node
#   COPY --chown=node:node . /app
#   RUN npm ci --omit=dev
#
# Both images run as a non-root user, under tini as PID 1.
#
# Why an init: sluice reaps its own workers, but it does not reap orphans
# it did not start (a worker's grandchild whose parent died is re-parented
# to PID 1, and would stay a zombie), and the kernel gives PID 1 no default
# signal actions. sluice relies on tini (Debian's static build) for both:
# tini is PID 1, forwards SIGTERM, SIGINT and SIGHUP to sluice alone (not
# to its process group: the workers are sluice's to stop, in order, after
# the drain) and reaps every orphan; it exits with sluice's exit code.
# `docker run --init` is then unnecessary.

ARG GO_VERSION=1.26
ARG DEBIAN=bookworm
ARG NODE_VERSION=22

# --- build: a static binary, no cgo ---------------------------------------
FROM golang:${GO_VERSION}-${DEBIAN} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X github.com/sluicehq/sluice/internal/cli.version=${VERSION}" \
      -o /out/sluice ./cmd/sluice \
 && /out/sluice version

# --- tini: the init, from Debian ------------------------------------------
# The package ships tini-static, which runs in the distroless image too.
FROM debian:${DEBIAN}-slim AS tini
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && /usr/bin/tini-static --version

# --- node: sluice + Node.js, for renderers it supervises -------------------
FROM node:${NODE_VERSION}-${DEBIAN}-slim AS node
COPY --from=tini /usr/bin/tini-static /usr/bin/tini
COPY --from=build /out/sluice /usr/local/bin/sluice
WORKDIR /app
ENV NODE_ENV=production
# The node image's own unprivileged user (uid 1000).
USER node
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/sluice"]
CMD ["serve", "-c", "/etc/sluice/sluice.yaml"]

# --- runtime (default): sluice alone ---------------------------------------
# For upstreams sluice does not start, or workers that are static binaries.
# Mount a config at /etc/sluice/sluice.yaml; without one sluice runs its
# built-in defaults (the embedded demo app on :3000).
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=tini /usr/bin/tini-static /tini
COPY --from=build /out/sluice /sluice
WORKDIR /etc/sluice
# distroless's nonroot user.
USER 65532:65532
EXPOSE 3000
ENTRYPOINT ["/tini", "--", "/sluice"]
CMD ["serve"]
