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
# A principal that exists already gets a new token (principal rotate), so a second run repairs a
# first one that stopped half way; the tokens it replaces stop working.
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

# token NAME [FLAGS...]: a new principal's token, or a fresh one for an existing principal.
token() {
    name=$1
    shift
    out=$(meshnav principal add "$name" "$@" --json 2>/dev/null) \
        || out=$(meshnav principal rotate "$name" --json)
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
admin=$(token admin --scopes mesh:admin)
meshnav grant allow admin '*/*/*' >/dev/null
db1=$(token node-db1 --scopes mesh:node --machine db1)
db2=$(token node-db2 --scopes mesh:node --machine db2)
web1=$(token node-web1 --scopes mesh:node --machine web1)
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

echo "bootstrap: done; the tokens are in .env. Next: docker compose up -d"
