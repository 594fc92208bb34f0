# syntax=docker/dockerfile:1
# One image for every meshnav process in compose.yaml: navigator, node agent, migrate, the CLI.
#   docker build -t meshnav:local .        (compose.yaml builds it too)
#   docker run --rm meshnav:local --help
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Every dependency ships wheels for Linux (psycopg[binary], google-re2, rapidfuzz): no compiler.
# The build context is mounted for the install only, so no source copy stays in a layer.
RUN --mount=type=bind,target=/src,rw \
    pip install /src \
    && groupadd --system meshnav \
    && useradd --system --gid meshnav --home-dir /var/lib/meshnav --shell /usr/sbin/nologin meshnav \
    && mkdir -p /var/lib/meshnav/notes \
    && chown -R meshnav:meshnav /var/lib/meshnav

USER meshnav
WORKDIR /var/lib/meshnav
# 7700: a navigator (`navigator serve --listen 0.0.0.0:7700`); 7801: a node agent.
EXPOSE 7700 7801
ENTRYPOINT ["meshnav"]
CMD ["--help"]
