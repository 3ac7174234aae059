# codex-gateway: built in a Rust stage, run on Debian slim with the pinned Codex CLI.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# The whole build context (minus .dockerignore), so every target Cargo.toml names (benches,
# tests, examples) is there: no stub of the manifest to keep in step. Compiled dependencies
# are kept between builds by cache mounts for the registry and target/ (BuildKit, and
# podman/buildah, which compose uses alike), chosen over cargo-chef because they need no
# extra tool in the image and also keep this crate's incremental state. A source edit
# rebuilds only this crate; scripts/check-docker-build checks in CI that this stage gets
# what Cargo needs.
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --profile dist --locked --bin codex-gateway \
    && strip -o /usr/local/bin/codex-gateway target/dist/codex-gateway

# Only the static codex binary leaves this stage (the npm package is ~420 MiB).
FROM debian:bookworm-slim AS codex
ARG CODEX_VERSION=0.171.0
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates nodejs npm \
    && rm -rf /var/lib/apt/lists/*
RUN npm install --prefix /opt/codex --no-audit --no-fund "@openai/codex@${CODEX_VERSION}" \
    && cp /opt/codex/node_modules/@openai/codex-linux-*/vendor/*/bin/codex /usr/local/bin/codex \
    && /usr/local/bin/codex --version

# What the gateway and a Codex worker both run on. Codex runs shell commands (bash, git);
# tini forwards SIGTERM. Two users: `gateway` holds the tokens and the database (0600);
# Codex and every command it runs are `codex` (codex.run_as in deploy/config.toml), which
# can read neither. /data is the gateway's, passable (0711) to reach Codex's home and the
# workspaces, which are codex's.
FROM debian:bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends bash ca-certificates git tini libcap2-bin \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --no-create-home --home-dir /data --uid 10001 gateway \
    && useradd --create-home --uid 10002 codex \
    && mkdir -p /data/codex-home /data/workspaces \
    && chown gateway:gateway /data && chmod 0711 /data \
    && chown codex:codex /data/codex-home /data/workspaces
COPY --from=codex /usr/local/bin/codex /usr/local/bin/codex
# Codex keeps its login and thread rollouts here; the gateway's database sits beside it.
ENV CODEX_HOME=/data/codex-home
WORKDIR /data
VOLUME /data
ENTRYPOINT ["tini", "--"]

# A Codex worker (compose's `worker` service): the app-server alone, as `codex`, on a
# WebSocket that needs the token. It is given only the token's SHA-256, so a command
# Codex runs there (as the same user) cannot read the token and approve its own
# requests. It has no gateway binary, so building a new gateway leaves this image, and
# a `docker compose up -d` leaves the worker and its running turns, as they were.
FROM runtime AS worker
USER codex
EXPOSE 4500
CMD ["sh", "-c", "exec codex app-server --listen ws://0.0.0.0:4500 --ws-auth capability-token --ws-token-sha256 \"$(tr -d '[:space:]' < /run/secrets/codex_worker_token_sha256)\""]

# The gateway (the default target).
FROM runtime
COPY --from=build /usr/local/bin/codex-gateway /usr/local/bin/codex-gateway
# The capabilities the gateway needs to start Codex as `codex` (SETUID, SETGID) and to
# stop it and what its commands leave running (KILL), and no others (the compose file
# drops every other one). Only `gateway` may run it: a command Codex runs as `codex`
# could otherwise start it with a config of its own and run anything as root.
RUN chown root:gateway /usr/local/bin/codex-gateway \
    && chmod 0750 /usr/local/bin/codex-gateway \
    && setcap cap_kill,cap_setuid,cap_setgid=ep /usr/local/bin/codex-gateway
COPY deploy/config.toml /etc/codex-gateway/config.toml
USER gateway
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["codex-gateway", "health", "--config", "/etc/codex-gateway/config.toml"]
CMD ["codex-gateway", "run", "--config", "/etc/codex-gateway/config.toml"]
