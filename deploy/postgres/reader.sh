#!/bin/sh
# Run once by the postgres image when it makes its data directory (docker-entrypoint-initdb.d):
# a login role that may only read, for the node's postgres module, which asks for one
# (mesh/modules/postgres.py). PUBLIC may no longer execute the functions by which one caller of
# the module could end another's query or write WAL outside its transaction, in `postgres` and
# in template1, so in every database made after this (the module refuses to start otherwise and
# names this REVOKE; docs/adr/0047). The image may source this file rather than run it: no
# `set`, no `exit`; a missing password still stops the container, loudly.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    --set=reader_password="${MESHNAV_READER_PASSWORD:?MESHNAV_READER_PASSWORD is not set}" <<'SQL'
CREATE ROLE meshnav_reader LOGIN PASSWORD :'reader_password';
GRANT pg_read_all_data TO meshnav_reader;
ALTER ROLE meshnav_reader SET default_transaction_read_only = on;
SQL
for database in template1 "$POSTGRES_DB"; do
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$database" <<'SQL'
REVOKE EXECUTE ON FUNCTION pg_cancel_backend(integer), pg_terminate_backend(integer, bigint),
    pg_logical_emit_message(boolean, text, text), pg_logical_emit_message(boolean, text, bytea)
    FROM PUBLIC;
SQL
done
