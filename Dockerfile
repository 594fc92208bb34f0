# One image for every meshnav process in compose.yaml: navigator, node agent, migrate, the CLI.
#   docker build -t meshnav:local .        (compose.yaml builds it too, once, as `migrate`)
#   docker run --rm meshnav:local --help
# No `# syntax=` line: BuildKit's built-in frontend reads `RUN --mount`, and naming a frontend
# image makes every build pull it, which fails on a machine without Docker Hub.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Every dependency ships wheels for Linux (psycopg[binary], google-re2, rapidfuzz): no compiler.
# They come from requirements.lock, hashes checked: the image runs the versions the tests ran.
# The build context is mounted for the install only, so no source copy stays in a layer.
# The secret `extra_ca` (compose.yaml: MESHNAV_BUILD_CA) is a PEM bundle that pip trusts besides
# the image's own, for a machine that reaches PyPI through a private certificate authority; it
# is mounted for this step only and stays in no layer.
RUN --mount=type=bind,target=/src,rw \
    --mount=type=secret,id=extra_ca \
    if [ -s /run/secrets/extra_ca ]; then \
        cat /etc/ssl/certs/ca-certificates.crt /run/secrets/extra_ca >/tmp/ca.pem 2>/dev/null \
            || cat /run/secrets/extra_ca >/tmp/ca.pem; \
        export PIP_CERT=/tmp/ca.pem; \
    fi \
    && pip install --require-hashes --no-deps -r /src/requirements.lock \
    && pip install --no-deps --no-build-isolation /src \
    && rm -f /tmp/ca.pem \
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
