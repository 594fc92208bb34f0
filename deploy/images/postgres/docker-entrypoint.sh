#!/bin/sh
# The entrypoint of meshnav's postgres:15 stand-in (deploy/images/postgres/Dockerfile): the
# conventions of the official image that compose.yaml relies on, and no more.
#
#   POSTGRES_PASSWORD  required the first time: the superuser's password
#   POSTGRES_USER      the superuser (postgres); POSTGRES_DB its database (POSTGRES_USER)
#   PGDATA             the data directory (/var/lib/postgresql/data); made when it holds no cluster
#   /docker-entrypoint-initdb.d/*  run once, in name order, after the cluster is made: *.sql
#                      through psql into POSTGRES_DB, *.sh run when executable and sourced when
#                      not; the server listens on its socket only meanwhile
#
# The server then listens on every address, and connections over TCP need a password checked by
# SCRAM-SHA-256; over the container's own socket they are trusted. Root drops to `postgres`.
set -eu

case ${1:-} in
    -*) set -- postgres "$@" ;; # flags alone are the server's
esac
if [ "${1:-}" != postgres ]; then
    exec "$@"
fi

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

export POSTGRES_USER="${POSTGRES_USER:-postgres}"
export POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "docker-entrypoint: set POSTGRES_PASSWORD: the data directory is new" >&2
        exit 1
    fi
    # The password reaches initdb through a file only this user reads, never a command line.
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
    rm -f "$pwfile"
    printf '\n# Any address, with a password (docker-entrypoint.sh)\nhost all all all scram-sha-256\n' \
        >>"$PGDATA/pg_hba.conf"
    printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"

    pg_ctl --pgdata="$PGDATA" --wait --silent --options="-c listen_addresses=''" start
    if [ "$POSTGRES_DB" != postgres ]; then
        psql -v ON_ERROR_STOP=1 --quiet --username="$POSTGRES_USER" --dbname=postgres \
            --set=db="$POSTGRES_DB" <<'SQL'
CREATE DATABASE :"db";
SQL
    fi
    for script in /docker-entrypoint-initdb.d/*; do
        case $script in
            *.sql)
                echo "docker-entrypoint: running $script" >&2
                psql -v ON_ERROR_STOP=1 --quiet --username="$POSTGRES_USER" \
                    --dbname="$POSTGRES_DB" --file="$script"
                ;;
            *.sh)
                echo "docker-entrypoint: running $script" >&2
                if [ -x "$script" ]; then
                    "$script"
                else
                    # shellcheck disable=SC1090  # the operator's script, read as it is
                    . "$script"
                fi
                ;;
            */\*) ;; # an empty folder
            *) echo "docker-entrypoint: ignoring $script" >&2 ;;
        esac
    done
    pg_ctl --pgdata="$PGDATA" --wait --silent --mode=fast stop
    echo "docker-entrypoint: the cluster is made; starting the server" >&2
fi

exec "$@"
