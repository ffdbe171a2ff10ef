# pathd container image: a multi-stage build.
#
#   builder  compiles the release binary with the replicated store and HTTP/2
#            (`cargo build --release --locked --features nats,http2 --bin pathd`);
#   runtime  Debian 12 slim with only the binary, the bundled maps, curl for HEALTHCHECK and
#            a non-root user; uploaded maps persist in the /data volume.
#
# With a registry (Docker/Podman):  docker build -t pathd .
# Without one (our machines and CI): scripts/container-test.sh, which makes local base images
# with scripts/base-image.sh and builds with
#   buildah bud --layers --format docker \
#     --build-arg BUILDER_IMAGE=localhost/pathd-builder-base:rust-1.95.0 \
#     --build-arg RUNTIME_IMAGE=localhost/pathd-runtime-base:bookworm -t localhost/pathd .
#
# Run: docker run -p 8080:8080 -v pathd-data:/data pathd
# HEALTHCHECK probes 127.0.0.1:8080; if PATHD_ADDR moves the port, override the health check.

# rust:*-slim has CARGO_HOME=/usr/local/cargo and gcc, like the local builder base.
ARG BUILDER_IMAGE=docker.io/library/rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${BUILDER_IMAGE} AS builder
WORKDIR /src
COPY . .
# The cache mounts keep downloaded crates and compiled dependencies between builds, so a
# rebuild after a source change only recompiles pathd itself. The binary is copied out of the
# cache mount because the mount is not part of the layer.
RUN --mount=type=cache,id=pathd-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=pathd-cargo-target,target=/src/target \
    cargo build --release --locked --features nats,http2 --bin pathd \
    && install -D -m 0755 target/release/pathd /out/pathd

FROM ${RUNTIME_IMAGE} AS runtime
# One layer for everything that changes rarely: curl for the health check, the service user
# (a fixed uid so volume ownership is predictable) and the data directory it owns.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 pathd \
    && useradd --system --uid 10001 --gid pathd --home-dir /srv/pathd --no-create-home \
        --shell /usr/sbin/nologin pathd \
    && install -d -o pathd -g pathd -m 0750 /data \
    && install -d -o root -g root -m 0755 /srv/pathd
COPY --chown=root:root maps/ /srv/pathd/maps/
COPY --from=builder --chown=root:root /out/pathd /usr/local/bin/pathd
WORKDIR /srv/pathd
# No allocator tuning: the server gives deleted subscriptions' memory back itself
# (malloc_trim, src/memory.rs).
ENV PATHD_ADDR=0.0.0.0:8080 \
    PATHD_MAPS_DIR=/srv/pathd/maps \
    PATHD_DATA_DIR=/data \
    PATHD_LOG_FORMAT=json
USER pathd:pathd
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/pathd"]
CMD ["serve"]
