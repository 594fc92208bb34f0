#!/bin/sh
# The operator's one-time bootstrap for compose.yaml, run from anywhere in the repository:
#
#   cp deploy/.env.example .env     # and set the five passwords
#   sh deploy/bootstrap.sh
#
# It makes, directly in the registry (the way the first administrator is made, SPEC §7):
#   admin       scope mesh:admin, allowed */*/* — the operator's token (MESHNAV_ADMIN_TOKEN)
#   node-db1    scope mesh:node, bound to machine db1 (DB1_NODE_TOKEN); node-db2 and node-web1 alike
#   mesh/notes  the mesh seat, placed on web1's role notes (web1 serves it with --seat)
# writes the tokens into .env (mode 0600; each is shown nowhere else), and seeds web1's notes.
# Run again, it keeps every token .env already holds, so a running stack goes on as it was; a
# principal that exists without a token in .env (a first run that stopped half way) gets a new
# one (principal rotate). To replace every token on purpose:
#   BOOTSTRAP_ROTATE=1 sh deploy/bootstrap.sh && docker compose up -d
# the old tokens stop working at once, and the nodes' heartbeats are refused until `up -d`
# recreates them with the new ones.
set -eu
cd "$(dirname "$0")/.."

if [ ! -f .env ]; then
    echo "bootstrap: no .env; copy deploy/.env.example to .env and set its passwords" >&2
    exit 1
fi
chmod 600 .env

# Compose checks every required variable on every command, and these do not exist yet.
export MESHNAV_ADMIN_TOKEN=bootstrap DB1_NODE_TOKEN=bootstrap DB2_NODE_TOKEN=bootstrap \
    WEB1_NODE_TOKEN=bootstrap

meshnav() {
    docker compose run --rm --no-TTY navigator-a "$@"
}

# held NAME: the value .env gives NAME, or nothing.
held() {
    sed -n "s/^$1=\([A-Za-z0-9_-]*\)\$/\1/p" .env | tail -n 1
}

# token VAR NAME [FLAGS...]: a new principal's token; for an existing principal, the token .env
# holds in VAR, or a fresh one when it holds none (or BOOTSTRAP_ROTATE=1).
token() {
    var=$1 name=$2
    shift 2
    if out=$(meshnav principal add "$name" "$@" --json 2>/dev/null); then
        :
    elif [ -n "$(held "$var")" ] && [ "${BOOTSTRAP_ROTATE:-0}" != 1 ]; then
        echo "bootstrap: $name exists; keeping its token from .env" >&2
        held "$var"
        return
    else
        echo "bootstrap: $name exists; giving it a new token (the old one stops working)" >&2
        out=$(meshnav principal rotate "$name" --json)
    fi
    printf '%s\n' "$out" | sed -n 's/^ *"token": *"\([A-Za-z0-9_-]*\)".*/\1/p'
}

# set_var NAME VALUE: replace NAME's line in .env, or add one.
set_var() {
    if grep -q "^$1=" .env; then
        sed -i.bak "s|^$1=.*|$1=$2|" .env && rm -f .env.bak
    else
        printf '%s=%s\n' "$1" "$2" >>.env
    fi
}

echo "bootstrap: building the image and migrating the registry"
docker compose build --quiet
if [ "${BOOTSTRAP_ROTATE:-0}" = 1 ]; then
    echo "bootstrap: BOOTSTRAP_ROTATE=1: every token is replaced; run docker compose up -d after" >&2
fi
admin=$(token MESHNAV_ADMIN_TOKEN admin --scopes mesh:admin)
meshnav grant allow admin '*/*/*' >/dev/null
db1=$(token DB1_NODE_TOKEN node-db1 --scopes mesh:node --machine db1)
db2=$(token DB2_NODE_TOKEN node-db2 --scopes mesh:node --machine db2)
web1=$(token WEB1_NODE_TOKEN node-web1 --scopes mesh:node --machine web1)
for value in "$admin" "$db1" "$db2" "$web1"; do
    if [ -z "$value" ]; then
        echo "bootstrap: a principal's token did not come back; nothing was written" >&2
        exit 1
    fi
done
# web1 serves the mesh seat notes (compose.yaml): a node serves a seat only where an operator
# placed it (docs/adr/0032-what-registers-and-where-the-navigator-connects.md)
meshnav seat place notes web1 notes >/dev/null
set_var MESHNAV_ADMIN_TOKEN "$admin"
set_var DB1_NODE_TOKEN "$db1"
set_var DB2_NODE_TOKEN "$db2"
set_var WEB1_NODE_TOKEN "$web1"

echo "bootstrap: seeding web1's notes (once)"
docker compose run --rm --no-TTY --no-deps --entrypoint python web1 -c "
import pathlib, sqlite3, sys
path = pathlib.Path('/var/lib/meshnav/notes/notes.db')
if not path.exists():
    sqlite3.connect(path).executescript(sys.stdin.read())
" <deploy/web1/notes.sql

echo "bootstrap: done; the tokens are in .env. Next: docker compose up -d --wait"
