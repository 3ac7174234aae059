# codex-gateway: built in a Rust stage, run on Debian slim with the pinned Codex CLI.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# Dependencies first, in their own layer: source edits do not rebuild them.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
    && cargo build --release --locked && rm -rf src
COPY migrations migrations
COPY src src
RUN touch src/main.rs src/lib.rs && cargo build --release --locked \
    && strip target/release/codex-gateway

# Only the static codex binary leaves this stage (the npm package is ~420 MiB).
FROM debian:bookworm-slim AS codex
ARG CODEX_VERSION=0.171.0
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates nodejs npm \
    && rm -rf /var/lib/apt/lists/*
RUN npm install --prefix /opt/codex --no-audit --no-fund "@openai/codex@${CODEX_VERSION}" \
    && cp /opt/codex/node_modules/@openai/codex-linux-*/vendor/*/bin/codex /usr/local/bin/codex \
    && /usr/local/bin/codex --version

FROM debian:bookworm-slim
# Codex runs shell commands (bash, git); tini reaps them and forwards SIGTERM.
RUN apt-get update && apt-get install -y --no-install-recommends bash ca-certificates git tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 codex \
    && mkdir -p /data/codex-home /data/workspaces && chown -R codex:codex /data
COPY --from=codex /usr/local/bin/codex /usr/local/bin/codex
COPY --from=build /src/target/release/codex-gateway /usr/local/bin/codex-gateway
COPY deploy/config.toml /etc/codex-gateway/config.toml
# Codex keeps its login and thread rollouts here; the gateway's database sits beside it.
ENV CODEX_HOME=/data/codex-home
USER codex
WORKDIR /data
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["codex-gateway", "health", "--config", "/etc/codex-gateway/config.toml"]
ENTRYPOINT ["tini", "--"]
CMD ["codex-gateway", "run", "--config", "/etc/codex-gateway/config.toml"]
