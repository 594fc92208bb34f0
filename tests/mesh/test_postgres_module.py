"""The ``postgres`` module against real PostgreSQL servers: each lists its own databases, reads
happen in a read-only transaction under a statement timeout and a row limit, and no message
repeats a query, a database name it was given, or the DSN."""

from __future__ import annotations

import resource
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import psycopg
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from mesh.modules.answers import MAX_MESSAGE_CHARS
from mesh.modules.postgres import build_postgres_module
from mesh.modules.turns import Turns
from tests.postgres_server import PostgresServer, start_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

MARKER = "zq_marker_9731"
SHOP = [
    "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL UNIQUE,"
    " tier text DEFAULT 'std')",
    "CREATE TABLE orders (customer_id int NOT NULL REFERENCES customers (id) ON DELETE CASCADE,"
    " line int, total numeric(10, 2), receipt bytea, placed date, PRIMARY KEY (customer_id, line))",
    "CREATE SCHEMA crm",
    "CREATE TABLE crm.leads (email text)",
    "CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 10",
    "INSERT INTO customers (name) VALUES ('ann'), ('bob'), ('cyd')",
    "INSERT INTO orders VALUES (1, 1, 12.50, '\\x00ff', '2024-05-01'), (2, 1, 3, NULL, NULL)",
]


@pytest.fixture(scope="module")
def shop(postgres_server: PostgresServer) -> Iterator[str]:
    """A ``shop`` database on the session's server; its DSN."""
    yield postgres_server.create_database("shop", *SHOP)
    postgres_server.execute("DROP DATABASE shop WITH (FORCE)")


@pytest.fixture
async def client(shop: str) -> AsyncIterator[Client[Any]]:
    # the session's superuser, allowed on purpose: these tests are of what the module reads
    module = build_postgres_module(shop, statement_timeout_s=1, allow_privileged_role=True)
    async with Client(module) as client:
        yield client


async def ok(client: Client[Any], tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client[Any], tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error
    text = str(result.content[0].text)  # type: ignore[union-attr]
    assert MARKER not in text
    return text


def count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def other_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A second, separate server holding a ``billing`` database."""
    with start_postgres(tmp_path_factory.mktemp("other")) as server:
        server.create_database("billing")
        yield server


async def test_each_server_lists_its_own_databases(
    postgres_server: PostgresServer, other_server: PostgresServer
) -> None:
    inventory = postgres_server.create_database("inventory")
    try:
        for dsn, own, foreign in (
            (inventory, "inventory", "billing"),
            (other_server.dsn("billing"), "billing", "inventory"),
        ):
            async with Client(build_postgres_module(dsn, allow_privileged_role=True)) as client:
                listed = (await ok(client, "list_databases"))["databases"]
            names = {db["name"] for db in listed}
            assert own in names
            assert foreign not in names
            assert [db["name"] for db in listed if db["default"]] == [own]
    finally:
        postgres_server.execute("DROP DATABASE inventory WITH (FORCE)")


@pytest.mark.parametrize(
    "database",
    [
        "postgresql://postgres@127.0.0.1:{port}/billing",
        "host=127.0.0.1 port={port} dbname=billing",
    ],
)
async def test_the_database_argument_never_reaches_another_server(
    client: Client[Any], other_server: PostgresServer, database: str
) -> None:
    database = database.format(port=other_server.port)
    text = await refused(client, "query", sql="SELECT 1", database=database)
    assert "no database" in text


async def test_every_tool_is_read_only(client: Client[Any]) -> None:
    tools = await client.list_tools()
    assert {t.name for t in tools} == {"list_databases", "list_tables", "describe_table", "query"}
    for tool in tools:
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.output_schema is not None
        assert tool.title


async def test_tables_are_listed_by_schema(client: Client[Any]) -> None:
    answer = await ok(client, "list_tables")
    assert answer["database"] == "shop"
    found = [(t["schema"], t["name"], t["kind"]) for t in answer["tables"]]
    assert found == [
        ("crm", "leads", "table"),
        ("public", "big_orders", "view"),
        ("public", "customers", "table"),
        ("public", "orders", "table"),
    ]
    crm = await ok(client, "list_tables", schema="crm")
    assert [t["name"] for t in crm["tables"]] == ["leads"]


async def test_another_database_on_the_same_server_can_be_read(client: Client[Any]) -> None:
    answer = await ok(client, "list_tables", database="postgres", schema="pg_catalog")
    assert answer["database"] == "postgres"
    assert "pg_class" in {t["name"] for t in answer["tables"]}


async def test_describe_table_gives_columns_keys_and_indexes(client: Client[Any]) -> None:
    table = await ok(client, "describe_table", table="orders")
    columns = {c["name"]: c for c in table["columns"]}
    assert list(columns) == ["customer_id", "line", "total", "receipt", "placed"]
    assert (columns["customer_id"]["pk"], columns["line"]["pk"], columns["total"]["pk"]) == (
        1,
        2,
        0,
    )
    assert columns["total"]["type"] == "numeric(10,2)"
    assert columns["line"]["notnull"] is True
    assert [i["name"] for i in table["indexes"]] == ["orders_pkey"]
    assert table["indexes"][0]["primary"] is True
    [key] = table["foreign_keys"]
    assert "REFERENCES customers(id) ON DELETE CASCADE" in key["definition"]
    customers = await ok(client, "describe_table", table="customers", schema="public")
    assert customers["columns"][2]["default"] == "'std'::text"
    leads = await ok(client, "describe_table", table="leads", schema="crm")
    assert leads["schema"] == "crm"
    assert (table["truncated"], customers["truncated"], leads["truncated"]) == (False,) * 3


async def test_describe_table_stops_at_the_answers_size(postgres_server: PostgresServer) -> None:
    """A table's owner may give its columns defaults of any length: what describe_table answers
    stops at the module's answer budget (1.5 MiB), with ``truncated``, instead of holding all of
    it in the node (ADR 0024)."""
    long = "x" * (1 << 20)
    dsn = postgres_server.create_database(
        "wide", f"CREATE TABLE wide (a text DEFAULT '{long}', b text DEFAULT '{long}', c int)"
    )
    try:
        async with Client(build_postgres_module(dsn, allow_privileged_role=True)) as client:
            table = await ok(client, "describe_table", table="wide")
            again = await ok(client, "describe_table", table="wide", schema="public")
        assert table["truncated"] is True
        assert [c["name"] for c in table["columns"]] == ["a"]
        assert len(table["columns"][0]["default"]) > len(long)
        assert table["indexes"] == [] and table["foreign_keys"] == []
        assert again == table
    finally:
        postgres_server.execute("DROP DATABASE wide WITH (FORCE)")


async def test_unknown_names_are_refused_without_repeating_them(client: Client[Any]) -> None:
    assert "no table" in await refused(client, "describe_table", table=MARKER)
    text = await refused(client, "query", sql="SELECT 1", database=MARKER)
    assert "no database" in text


async def test_query_returns_columns_and_json_rows(client: Client[Any]) -> None:
    answer = await ok(
        client, "query", sql="SELECT customer_id, total, receipt, placed FROM orders ORDER BY 1"
    )
    assert answer == {
        "columns": ["customer_id", "total", "receipt", "placed"],
        "rows": [[1, "12.50", "\\x00ff", "2024-05-01"], [2, "3.00", None, None]],
        "truncated": False,
    }


async def test_dates_python_cannot_hold_come_back_as_postgresql_prints_them(
    client: Client[Any],
) -> None:
    """``infinity``, a date before the year 1 or a time of 24:00 is a value PostgreSQL reads and
    Python's dates cannot hold: psycopg's loader refused it, and the whole query failed, blaming
    its parameters. Such a value is given as PostgreSQL prints it; the others as before."""
    sql = (
        "SELECT 'infinity'::date, '-infinity'::timestamp, 'infinity'::timestamptz,"
        " '0044-03-15 BC'::date, '24:00'::time, '2024-05-01'::date, '2024-05-01 12:30'::timestamp"
    )
    answer = await ok(client, "query", sql=sql)
    assert answer["rows"] == [
        [
            "infinity", "-infinity", "infinity", "0044-03-15 BC", "24:00:00", "2024-05-01",
            "2024-05-01T12:30:00",
        ]
    ]  # fmt: skip


async def test_intervals_come_back_as_postgresql_prints_them(client: Client[Any]) -> None:
    """Loaded as Python's timedelta, a month was 30 days and an hour ago "-1 days, 23:00:00"."""
    sql = "SELECT interval '1 month', interval '-1 hour', ARRAY[interval '1 year 2 days']"
    answer = await ok(client, "query", sql=sql)
    assert answer["rows"] == [["1 mon", "-01:00:00", ["1 year 2 days"]]]


async def test_an_empty_result_still_names_its_columns(client: Client[Any]) -> None:
    answer = await ok(client, "query", sql="SELECT id, name FROM customers WHERE false")
    assert answer == {"columns": ["id", "name"], "rows": [], "truncated": False}


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT name FROM customers WHERE id = %s", [2]),
        ("SELECT name FROM customers WHERE id = %(id)s", {"id": 2}),
    ],
)
async def test_query_binds_parameters(client: Client[Any], sql: str, params: Any) -> None:
    assert (await ok(client, "query", sql=sql, params=params))["rows"] == [["bob"]]


async def test_placeholders_follow_psycopgs_rules(client: Client[Any]) -> None:
    """The module numbers the placeholders itself and sends the statement as it checked it
    (ADR 0047): %% is a literal %, a name used twice is one value, a % without parameters is
    PostgreSQL's, and placeholders that do not fit their parameters are refused as before."""
    sql = "SELECT 7 %% 4, %(a)s::int + %(a)s::int, '%%s', %(b)s"
    answer = await ok(client, "query", sql=sql, params={"a": 2, "b": [1, 2], "unused": 0})
    assert answer["rows"] == [[3, 4, "%s", [1, 2]]]
    assert (await ok(client, "query", sql="SELECT 7 % 4"))["rows"] == [[3]]
    for sql, params in (
        ("SELECT %s, %s", [1]),
        ("SELECT %s", [1, 2]),
        ("SELECT %s", {"a": 1}),
        ("SELECT %(a)s", [1]),
        ("SELECT %(a)s", {"b": 1}),
        ("SELECT %(a)s, %s", {"a": 1}),
        ("SELECT 7 % 4", [1]),
        ("SELECT %d", [1]),
        ("SELECT %(a", {"a": 1}),
    ):
        text = await refused(client, "query", sql=sql, params=params)
        assert "%s with a list or %(name)s with an object" in text, sql


async def test_rows_stop_at_max_rows(client: Client[Any]) -> None:
    started = time.monotonic()
    answer = await ok(client, "query", sql="SELECT generate_series(1, 50000000)", max_rows=5)
    assert answer["rows"] == [[1], [2], [3], [4], [5]]
    assert answer["truncated"] is True
    assert time.monotonic() - started < 5  # fetched a page, not fifty million rows


async def test_rows_stop_at_the_answers_size_as_well_as_at_max_rows(client: Client[Any]) -> None:
    """Four rows of 50 MB made a 400 MB answer, and held the node's loop for 14 s."""
    sql = "SELECT repeat('x', 200000) FROM generate_series(1, 1000)"
    answer = await ok(client, "query", sql=sql, max_rows=1000)
    assert answer["truncated"] is True
    assert 5 <= len(answer["rows"]) <= 8  # 1.5 MiB holds seven rows of 200 kB
    text = await refused(client, "query", sql=f"SELECT repeat('x', 2000000) AS {MARKER}")
    assert "first row" in text
    # counted as JSON sends them: a CJK character is three bytes (200,000 of them, 600 kB)
    wide = "SELECT repeat(chr(19990), 200000) FROM generate_series(1, 1000)"
    answer = await ok(client, "query", sql=wide, max_rows=1000)
    assert answer["truncated"] is True
    assert len(answer["rows"]) == 2


async def test_rows_past_the_answers_size_are_not_fetched(
    reader: str, postgres_server: PostgresServer
) -> None:
    """A review: 50 rows were fetched whole before the 1.5 MiB budget was looked at, so a
    small row and then 20 MB ones took 1 GB of the node's memory for one call."""
    sql = (
        "SELECT repeat('x', CASE WHEN g = 1 THEN 10 ELSE 20000000 END)"
        " FROM generate_series(1, 50) g"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    async with Client(build_postgres_module(reader, statement_timeout_s=5)) as client:
        answer = await ok(client, "query", sql=sql, max_rows=50)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert answer["rows"] == [["x" * 10]]
    assert answer["truncated"] is True
    assert grown_mb < 300, grown_mb  # a 20 MB row or two in flight, not 49 of them
    assert backends_left(postgres_server, READER) == []


async def test_calls_at_once_are_bounded(reader: str) -> None:
    """Each call may hold a row in memory: the node's turns bound the calls at once, a call
    waits its timeout for a turn, then answers that the machine's reads are busy."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity, pg_sleep(0.3)"
        " WHERE usename = current_user AND state = 'active'"
    )
    seen: list[int] = []
    turns = Turns(total=2, per_caller=2)
    async with Client(build_postgres_module(reader, statement_timeout_s=2, turns=turns)) as client:

        async def one() -> None:
            seen.append((await ok(client, "query", sql=sql))["rows"][0][0])

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(one)
    assert len(seen) == 5
    assert max(seen) <= 2
    taken = Turns(total=8, per_caller=1)
    assert taken.try_take("")  # the in-memory client's caller holds its one turn
    started = time.monotonic()
    module = build_postgres_module(reader, statement_timeout_s=0.5, turns=taken)
    async with Client(module) as client:
        text = await refused(client, "query", sql="SELECT 1")
    assert "busy" in text and "at most 1 of one caller" in text
    assert time.monotonic() - started < 3


async def test_max_rows_is_bounded(client: Client[Any]) -> None:
    with pytest.raises(ToolError):
        await client.call_tool("query", {"sql": "SELECT 1", "max_rows": 1001})


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM customers",
        "INSERT INTO customers (name) VALUES ('dan')",
        "UPDATE customers SET tier = 'vip'",
        "DROP TABLE orders",
        "CREATE TABLE extra (a int)",
        "TRUNCATE customers CASCADE",
        "WITH gone AS (DELETE FROM customers RETURNING *) SELECT * FROM gone",
        "SELECT nextval('customers_id_seq')",
        "SELECT setval('customers_id_seq', 100)",
        "SELECT * FROM customers FOR UPDATE",
        "COMMIT",
        "SELECT 1; DELETE FROM customers",
    ],
)
async def test_query_refuses_writes(client: Client[Any], shop: str, sql: str) -> None:
    await refused(client, "query", sql=f"{sql} -- {MARKER}")
    assert count(shop, "customers") == 3
    assert count(shop, "orders") == 2
    with psycopg.connect(shop) as conn:
        row = conn.execute("SELECT last_value FROM customers_id_seq").fetchone()
    assert row == (3,)


async def test_a_write_is_refused_by_the_read_only_transaction(client: Client[Any]) -> None:
    text = await refused(client, "query", sql="SELECT nextval('customers_id_seq')")
    assert "read-only" in text


async def test_a_slow_query_stops_at_the_statement_timeout(client: Client[Any]) -> None:
    started = time.monotonic()
    text = await refused(client, "query", sql="SELECT pg_sleep(30)")
    assert "statement timeout" in text
    assert time.monotonic() - started < 10


READER = "meshnav_reader"


@pytest.fixture(scope="module")
def reader(postgres_server: PostgresServer, shop: str) -> Iterator[str]:
    """A role that is not a superuser, as a deployment gives the module; its DSN to ``shop``."""
    postgres_server.execute(f"CREATE ROLE {READER} LOGIN")
    yield postgres_server.dsn("shop", user=READER)
    postgres_server.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            f" WHERE usename = '{READER}'")  # fmt: skip
    postgres_server.execute(f"DROP ROLE {READER}")


def backends_left(server: PostgresServer, role: str, wait_s: float = 3.0) -> list[Any]:
    """The role's backends still on the server, once given ``wait_s`` to end."""
    deadline = time.monotonic() + wait_s
    while True:
        with psycopg.connect(server.dsn()) as conn:
            rows = conn.execute(
                "SELECT pid, state, left(query, 60) FROM pg_stat_activity WHERE usename = %s",
                [role],
            ).fetchall()
        if not rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


async def test_a_query_cannot_lift_its_own_timeout_for_later_rows(
    reader: str, postgres_server: PostgresServer
) -> None:
    """A review: the timeout was set once for the transaction and rows came from several
    FETCHes, so SQL that set statement_timeout to 0 slept an hour on row 61, past the
    client's deadline, holding its locks and snapshot. ``query`` now refuses ``set_config``
    (ADR 0047), but a view of the database's owner may still call it."""
    lifted = "SELECT set_config('statement_timeout', '0', true) AS lifted"
    postgres_server.execute(f"CREATE VIEW lifts_timeout AS {lifted}", database="shop")
    postgres_server.execute(f"GRANT SELECT ON lifts_timeout TO {READER}", database="shop")
    sql = (
        "SELECT g, lifted, pg_sleep(CASE WHEN g > 60 THEN 3600 ELSE 0 END)"
        " FROM generate_series(1, 100) g, lifts_timeout"
    )
    started = time.monotonic()
    try:
        async with Client(build_postgres_module(reader, statement_timeout_s=1)) as client:
            text = await refused(client, "query", sql=sql, max_rows=100)
            named = await refused(client, "query", sql=lifted)
    finally:
        postgres_server.execute("DROP VIEW lifts_timeout", database="shop")
    assert "statement timeout" in text
    assert time.monotonic() - started < 5
    assert backends_left(postgres_server, READER) == []
    assert "may not call set_config" in named


async def test_a_query_past_the_clients_deadline_is_cancelled_on_the_server(
    reader: str, postgres_server: PostgresServer
) -> None:
    """A server that does not stop at its timeout is stopped at the client's deadline: at
    that deadline anyio cancelled psycopg's own cancel request, and the closed connection
    left the backend running (pg_sleep(3600): an hour)."""
    started = time.monotonic()
    module = build_postgres_module(  # the client's deadline before the server's
        reader, statement_timeout_s=30, connect_timeout_s=1, deadline_slack_s=-28.0
    )
    async with Client(module) as client:
        text = await refused(client, "query", sql="SELECT pg_sleep(3600)")
    assert "did not answer in time" in text
    assert time.monotonic() - started < 8
    assert backends_left(postgres_server, READER) == []


async def test_errors_pass_on_postgresqls_message_about_the_statement(
    client: Client[Any],
) -> None:
    """Issue 29: what to do, then PostgreSQL's own primary message about the caller's
    statement; bounded, and never a parameter's value."""
    text = await refused(client, "query", sql="SELECT * FROM nosuchtable")
    assert "see list_tables" in text
    assert '(PostgreSQL: relation "nosuchtable" does not exist)' in text
    text = await refused(client, "query", sql="SELEC 1")
    assert 'syntax error at or near "SELEC"' in text
    text = await refused(client, "query", sql="SELECT nosuchcolumn FROM customers")
    assert 'column "nosuchcolumn" does not exist' in text
    long_name = "t" + "x" * 5000  # PostgreSQL cuts an identifier at 63 bytes itself
    text = await refused(
        client,
        "query",
        sql=f"SELECT 1 FROM {long_name}, {long_name}_2 WHERE 1/0 = 1 AND '{'y' * 5000}' = ''",
    )
    assert len(text.partition("(PostgreSQL: ")[2]) <= MAX_MESSAGE_CHARS + 1
    text = await refused(client, "query", sql="SELECT %s::int", params=[MARKER])
    assert 'invalid input syntax for type integer: "<parameter>"' in text
    text = await refused(client, "query", sql="SELECT %(n)s::int", params={"n": "abc"})
    assert '"abc"' not in text and "<parameter>" in text


async def test_a_message_naming_a_file_of_the_server_names_no_path(client: Client[Any]) -> None:
    """Even for a role allowed to read the server's files, ``query`` no longer calls
    ``pg_read_file`` (ADR 0047); its refusal names no path either."""
    text = await refused(client, "query", sql="SELECT pg_read_file('/nonexistent/dir/secret.conf')")
    assert "/nonexistent" not in text and "secret.conf" not in text
    assert "may not call pg_read_file" in text


async def test_connection_errors_never_repeat_the_dsn() -> None:
    secret = "s3cret-pw"
    dsn = f"postgresql://someone:{secret}@127.0.0.1:1/nowhere"
    async with Client(build_postgres_module(dsn, connect_timeout_s=2)) as client:
        result = await client.call_tool("list_databases", {}, raise_on_error=False)
    text = str(result.content[0].text)
    assert result.is_error
    assert "cannot be reached" in text
    for part in (secret, "someone", "127.0.0.1", "nowhere"):
        assert part not in text
