"""The ``sqlite`` module on real database files: discovery, reading, refusing writes in
``query``, writing with ``execute``, limits, and errors that never repeat the SQL."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from mesh.errors import ModuleSpecError
from mesh.modules.answers import MAX_ANSWER_BYTES, MAX_MESSAGE_CHARS
from mesh.modules.sqlite import build_sqlite_module
from mesh.modules.turns import Turns
from tests.harness import loop_ticks_during

MARKER = "zq_marker_9731"  # put into SQL and parameters; must never come back in an error
SLOW = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"

SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, tier TEXT DEFAULT 'std');
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    total REAL,
    receipt BLOB
);
CREATE INDEX orders_by_customer ON orders(customer_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 10;
INSERT INTO customers (name) VALUES ('ann'), ('bob'), ('cyd');
INSERT INTO orders (customer_id, total, receipt) VALUES (1, 12.5, x'00ff'), (2, 3.0, NULL);
"""


def make_db(path: Path, script: str) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    conn.close()
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    make_db(folder / "shop.db", SHOP)
    make_db(folder / "metrics.sqlite3", "CREATE TABLE samples (at TEXT, value REAL);")
    (folder / "notes.txt").write_text("not a database")
    return folder


@pytest.fixture
async def client(data_dir: Path, tmp_path: Path) -> AsyncIterator[Client[Any]]:
    single = make_db(tmp_path / "audit.sqlite", "CREATE TABLE events (what TEXT);")
    server = build_sqlite_module([data_dir, single], time_limit_s=0.5)
    async with Client(server) as client:
        yield client


async def ok(client: Client[Any], tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client[Any], tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert MARKER not in text
    return str(text)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` and its bytes: a refused statement changes none and adds none."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        (n,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    conn.close()
    return int(n)


async def test_databases_are_named_by_file_stem(client: Client[Any], tmp_path: Path) -> None:
    answer = await ok(client, "list_databases")
    listed = answer["databases"]
    assert [db["name"] for db in listed] == ["metrics", "shop", "audit"]
    assert all(db["size_bytes"] > 0 for db in listed)
    # issue 26: names only, never where the node keeps its files
    assert all(set(db) == {"name", "size_bytes"} for db in listed)
    assert str(tmp_path) not in json.dumps(answer)


@pytest.mark.parametrize("sql", ["PRAGMA database_list", "SELECT file FROM pragma_database_list"])
async def test_no_statement_answers_where_the_file_is(
    client: Client[Any], tmp_path: Path, sql: str
) -> None:
    """Issue 26: ``database_list`` answered the file's absolute path."""
    for tool in ("query", "execute"):
        text = await refused(client, tool, database="shop", sql=sql)
        assert "statement refused" in text and str(tmp_path) not in text


async def test_database_argument_lists_its_choices(client: Client[Any]) -> None:
    for tool in await client.list_tools():
        schema = tool.input_schema["properties"].get("database")
        if schema is not None:
            assert schema["enum"] == ["metrics", "shop", "audit"]


async def test_annotations_say_query_reads_and_execute_destroys(client: Client[Any]) -> None:
    hints = {tool.name: tool.annotations for tool in await client.list_tools()}
    assert set(hints) == {"list_databases", "list_tables", "describe_table", "query", "execute"}
    for name, hint in hints.items():
        assert hint is not None
        if name == "execute":
            assert (hint.read_only_hint, hint.destructive_hint) == (False, True)
        else:
            assert (hint.read_only_hint, hint.destructive_hint) == (True, False)


def test_two_databases_with_one_name_are_refused(tmp_path: Path, data_dir: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    make_db(other / "shop.sqlite", "CREATE TABLE t (a);")
    with pytest.raises(ModuleSpecError, match="'shop'"):
        build_sqlite_module([data_dir, other])


async def test_the_same_file_twice_is_one_database(data_dir: Path) -> None:
    """A file named on its own and found again in a folder given beside it is served once, under
    its one name, and not refused as two databases with one name."""
    server = build_sqlite_module([data_dir, data_dir / "shop.db", data_dir / "." / "shop.db"])
    async with Client(server) as client:
        listed = (await ok(client, "list_databases"))["databases"]
        tools = {tool.name: tool for tool in await client.list_tools()}
        rows = await ok(client, "query", database="shop", sql="SELECT count(*) AS n FROM customers")
    assert [db["name"] for db in listed] == ["metrics", "shop"]
    assert tools["query"].input_schema["properties"]["database"]["enum"] == ["metrics", "shop"]
    assert rows["rows"] == [[3]]


async def test_tables_and_views_are_listed(client: Client[Any]) -> None:
    tables = (await ok(client, "list_tables", database="shop"))["tables"]
    assert tables == [
        {"name": "big_orders", "type": "view"},
        {"name": "customers", "type": "table"},
        {"name": "orders", "type": "table"},
    ]


async def test_describe_table_gives_columns_indexes_and_foreign_keys(client: Client[Any]) -> None:
    table = await ok(client, "describe_table", database="shop", table="orders")
    columns = {c["name"]: c for c in table["columns"]}
    assert list(columns) == ["id", "customer_id", "total", "receipt"]
    assert columns["id"]["pk"] == 1
    assert columns["customer_id"] == {
        "name": "customer_id", "type": "INTEGER", "notnull": True, "default": None, "pk": 0
    }  # fmt: skip
    assert [i["name"] for i in table["indexes"]] == ["orders_by_customer"]
    assert table["indexes"][0]["columns"] == ["customer_id"]
    assert table["foreign_keys"] == [
        {"columns": ["customer_id"], "table": "customers", "references": ["id"],
         "on_update": "NO ACTION", "on_delete": "CASCADE"}
    ]  # fmt: skip
    customers = await ok(client, "describe_table", database="shop", table="customers")
    assert customers["columns"][2]["default"] == "'std'"
    assert customers["indexes"][0]["unique"] is True


async def test_unknown_names_are_refused_without_repeating_them(client: Client[Any]) -> None:
    text = await refused(client, "describe_table", database="shop", table=MARKER)
    assert "no table" in text
    text = await refused(client, "list_tables", database=MARKER)
    assert "no SQLite database" in text


async def test_query_returns_columns_and_rows(client: Client[Any]) -> None:
    answer = await ok(
        client, "query", database="shop", sql="SELECT id, total, receipt FROM orders ORDER BY id"
    )
    assert answer == {
        "columns": ["id", "total", "receipt"],
        "rows": [[1, 12.5, {"base64": "AP8="}], [2, 3.0, None]],
        "truncated": False,
    }


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT name FROM customers WHERE id = ?", [2]),
        ("SELECT name FROM customers WHERE id = :id", {"id": 2}),
    ],
)
async def test_query_binds_parameters(client: Client[Any], sql: str, params: Any) -> None:
    answer = await ok(client, "query", database="shop", sql=sql, params=params)
    assert answer["rows"] == [["bob"]]


async def test_query_stops_at_max_rows(client: Client[Any]) -> None:
    answer = await ok(client, "query", database="shop", sql="SELECT * FROM customers", max_rows=2)
    assert len(answer["rows"]) == 2
    assert answer["truncated"] is True


async def test_max_rows_is_bounded(client: Client[Any]) -> None:
    with pytest.raises(ToolError):
        await client.call_tool("query", {"database": "shop", "sql": "SELECT 1", "max_rows": 1001})


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM orders",
        "UPDATE customers SET name = 'x'",
        "INSERT INTO customers (name) VALUES ('dan')",
        "DROP TABLE orders",
        "CREATE TABLE extra (a)",
        "ATTACH DATABASE ':memory:' AS other",
        "VACUUM INTO '{dir}/copy.db'",
        "PRAGMA user_version = 7",
        "PRAGMA query_only = OFF",
        "BEGIN",
        "REPLACE INTO customers (id, name) VALUES (1, 'x')",
    ],
)
async def test_query_refuses_writes(client: Client[Any], data_dir: Path, sql: str) -> None:
    before = snapshot(data_dir)
    sql = sql.format(dir=data_dir)
    await refused(client, "query", database="shop", sql=f"{sql} -- {MARKER}")
    assert snapshot(data_dir) == before


async def test_query_allows_introspection_pragmas(client: Client[Any]) -> None:
    answer = await ok(client, "query", database="shop", sql="PRAGMA table_info(customers)")
    assert [row[1] for row in answer["rows"]] == ["id", "name", "tier"]
    answer = await ok(client, "query", database="shop", sql="PRAGMA user_version")
    assert answer["rows"] == [[0]]


async def test_query_takes_one_statement(client: Client[Any]) -> None:
    text = await refused(client, "query", database="shop", sql=f"SELECT 1; SELECT '{MARKER}'")
    assert "one statement" in text


async def test_errors_pass_on_sqlites_message_about_the_statement(client: Client[Any]) -> None:
    """Issue 29: the message names what SQLite could not read (the caller's own statement on
    the caller's own machine), after what to do; bounded in length."""
    text = await refused(client, "query", database="shop", sql="SELECT * FROM nosuchtable")
    assert "check its syntax and the names it uses" in text
    assert "(SQLite: no such table: nosuchtable)" in text
    text = await refused(client, "query", database="shop", sql="SELEC 1")
    assert 'near "SELEC": syntax error' in text
    text = await refused(
        client, "execute", database="shop", sql="INSERT INTO nosuchtable VALUES (1)"
    )
    assert "no such table: nosuchtable" in text
    long_name = "t" + "x" * 5000
    text = await refused(client, "query", database="shop", sql=f"SELECT * FROM {long_name}")
    said = text.partition("(SQLite: ")[2]
    assert 0 < len(said) <= MAX_MESSAGE_CHARS + 1
    assert said.endswith("\u2026)")


async def test_errors_never_repeat_the_parameters(client: Client[Any]) -> None:
    await refused(client, "query", database="shop", sql="SELECT ?, ?", params=[MARKER])
    text = await refused(
        client, "execute", database="shop", sql="INSERT INTO customers (id, name) VALUES (1, ?)",
        params=[MARKER],
    )  # fmt: skip
    assert "PRIMARY KEY constraint" in text


async def test_a_runaway_query_stops_at_the_time_limit(client: Client[Any]) -> None:
    started = time.monotonic()
    text = await refused(client, "query", database="shop", sql=SLOW)
    assert "time limit" in text
    assert time.monotonic() - started < 10


async def test_a_long_query_does_not_block_the_event_loop(client: Client[Any]) -> None:
    ticks = await loop_ticks_during(
        lambda: refused(client, "query", database="shop", sql=SLOW), every_s=0.05
    )
    assert ticks >= 4  # the 0.5 s query ran while the loop kept ticking


async def test_long_steps_stop_at_the_time_limit_too(client: Client[Any]) -> None:
    """SQLite looks for an interrupt between its steps, and one call of ``instr`` over long
    strings is quadratic: values are bounded, so a step ends soon, and the deadline's interrupt
    stops the statement between rows (the progress handler that looked every 1,000 steps
    missed 20 rows of 1 s each)."""
    # each row its own haystack, so that SQLite cannot evaluate the call once for all 40
    long_step = "instr(printf('%.*c', 300000 + n, 'a'), printf('%.*c', 150000, 'a') || 'b')"
    rows = " UNION ALL ".join(f"SELECT {n} AS n" for n in range(40))
    started = time.monotonic()
    text = await refused(
        client, "query", database="shop", sql=f"SELECT {long_step} FROM ({rows}) -- {MARKER}"
    )
    assert "time limit" in text
    assert time.monotonic() - started < 5


async def test_no_value_is_longer_than_the_module_allows(client: Client[Any]) -> None:
    """A 400 MB blob took 6 GB of the node's memory and 71 s to send."""
    text = await refused(client, "query", database="shop", sql=f"SELECT zeroblob(4e8) -- {MARKER}")
    assert "1 MiB" in text
    started = time.monotonic()  # printf stops growing its string at the limit, then the clock
    await refused(client, "query", database="shop", sql="SELECT printf('%.*c', 900000000, 'a')")
    assert time.monotonic() - started < 5


async def test_rows_stop_at_the_answers_size_as_well_as_at_max_rows(client: Client[Any]) -> None:
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)"
        " SELECT i, zeroblob(200000) FROM n"
    )
    answer = await ok(client, "query", database="shop", sql=sql, max_rows=50)
    assert answer["truncated"] is True
    assert 4 <= len(answer["rows"]) < 10  # 1.5 MiB of base64 holds 5 rows of 200 kB blobs
    text = await refused(
        client,
        "query",
        database="shop",
        sql=f"SELECT zeroblob(900000), zeroblob(900000) -- {MARKER}",
    )
    assert "first row" in text
    # counted as JSON sends them: a CJK character is three bytes (200,000 of them, 600 kB)
    wide = "substr(replace(hex(zeroblob(100000)), '0', char(19990)), 1, 200000)"
    answer = await ok(
        client, "query", database="shop", sql=sql.replace("zeroblob(200000)", wide), max_rows=50
    )
    assert answer["truncated"] is True
    assert len(answer["rows"]) == 2


async def test_fts3_tokenizer_is_refused_as_it_deals_in_pointers(client: Client[Any]) -> None:
    """``fts3_tokenizer('simple')`` returns a library address; given a blob, it registers one."""
    await refused(
        client, "query", database="shop", sql=f"SELECT fts3_tokenizer('simple') -- {MARKER}"
    )
    await refused(
        client, "execute", database="shop", sql="SELECT fts3_tokenizer('x', X'4141414141414141')"
    )


async def test_execute_writes_and_commits(client: Client[Any], data_dir: Path) -> None:
    answer = await ok(
        client, "execute", database="shop", sql="INSERT INTO customers (name) VALUES (?)",
        params=["dan"],
    )  # fmt: skip
    assert answer == {"rowcount": 1, "lastrowid": 4}
    assert count(data_dir / "shop.db", "customers") == 4
    answer = await ok(client, "execute", database="shop", sql="UPDATE customers SET tier = 'vip'")
    assert answer == {"rowcount": 4, "lastrowid": None}


async def test_execute_can_change_the_schema(client: Client[Any]) -> None:
    await ok(client, "execute", database="metrics", sql="CREATE TABLE hosts (name TEXT)")
    tables = (await ok(client, "list_tables", database="metrics"))["tables"]
    assert {"name": "hosts", "type": "table"} in tables


async def test_a_failed_execute_changes_nothing(client: Client[Any], data_dir: Path) -> None:
    sql = "INSERT INTO customers (name) SELECT 'eve' UNION ALL SELECT 'eve'"  # 2nd row breaks
    text = await refused(client, "execute", database="shop", sql=sql)
    assert "UNIQUE constraint" in text
    assert count(data_dir / "shop.db", "customers") == 3


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH DATABASE ':memory:' AS other",
        "VACUUM INTO '{dir}/copy.db'",
        "PRAGMA journal_mode = WAL",
        "BEGIN",
        "SAVEPOINT s",
    ],
)
async def test_execute_refuses_attach_transactions_and_settings(
    client: Client[Any], data_dir: Path, sql: str
) -> None:
    before = snapshot(data_dir)
    await refused(client, "execute", database="shop", sql=sql.format(dir=data_dir))
    assert snapshot(data_dir) == before


async def test_execute_has_the_time_limit_too(client: Client[Any], data_dir: Path) -> None:
    sql = f"INSERT INTO customers (name) SELECT 'x' || ({SLOW})"
    assert "time limit" in await refused(client, "execute", database="shop", sql=sql)
    assert count(data_dir / "shop.db", "customers") == 3


async def test_statements_running_at_once_are_bounded(data_dir: Path) -> None:
    """A caller whose turns are all taken waits up to the time limit for one, then hears that
    the machine is busy; a turn given back is taken at once."""
    turns = Turns(total=8, per_caller=2)
    async with Client(build_sqlite_module([data_dir], time_limit_s=0.3, turns=turns)) as client:
        assert turns.try_take("") and turns.try_take("")  # the in-memory client's caller
        text = await refused(client, "query", database="shop", sql=f"SELECT '{MARKER}'")
        assert "busy" in text and "at most 2 of one caller" in text
        turns.give_back("")
        assert (await ok(client, "query", database="shop", sql="SELECT 1"))["rows"] == [[1]]
        assert turns.held("") == 1


async def test_a_write_stopped_in_a_long_step_changes_nothing_and_leaves_reads_working(
    data_dir: Path,
) -> None:
    """A write whose one step runs past the time limit is killed with its worker before it
    commits; the journal it left is rolled back, so reads go on."""
    async with Client(build_sqlite_module([data_dir], time_limit_s=0.5)) as client:
        spin = "length(printf('%.*c', 2147483647, 'a'))"
        sql = f"INSERT INTO customers (name) SELECT 'x' || max({', '.join([spin] * 20)})"
        text = await refused(client, "execute", database="shop", sql=sql)
        assert "time limit" in text and "nothing was changed" in text
        answer = await ok(client, "query", database="shop", sql="SELECT count(*) FROM customers")
        assert answer["rows"] == [[3]]


async def test_a_row_is_bounded_before_it_is_built(client: Client[Any]) -> None:
    """A review: values were bounded one by one (1 MiB) but not their number — 1,999 columns of
    a 1 MB blob made one row of 2 GB, built and base64'd before the answer's budget was asked
    (3 calls, 11 GB). A statement names at most 128 columns, and a row past the budget is
    refused before a byte of it is encoded."""
    wide = ", ".join(["x"] * 129)
    text = await refused(
        client, "query", database="shop", sql=f"SELECT {wide} FROM (SELECT zeroblob(1000) AS x)"
    )
    assert "at most 128 columns" in text
    row = ", ".join(["x"] * 3)
    big = f"SELECT {row} FROM (SELECT zeroblob(1000000) AS x)"  # 3 MB raw: past 1.5 MiB
    assert "answer limit" in await refused(client, "query", database="shop", sql=big)


async def test_execute_counts_what_it_changed_and_keeps_no_returned_row(
    client: Client[Any], data_dir: Path
) -> None:
    """A review: a change written ``WITH … INSERT`` answered ``rowcount: -1`` ("no rows"), as
    Python counts by a statement's first word; and rows it returned were all kept, unused."""
    sql = "WITH v(x) AS (VALUES ('dee'), ('eve'), ('fay')) INSERT INTO customers (name) SELECT x FROM v"
    assert (await ok(client, "execute", database="shop", sql=sql))["rowcount"] == 3
    returning = "UPDATE customers SET tier = 'gold' RETURNING zeroblob(1000)"
    assert (await ok(client, "execute", database="shop", sql=returning))["rowcount"] == 6
    assert count(data_dir / "shop.db", "customers") == 6


async def test_list_tables_names_at_most_a_thousand(tmp_path: Path) -> None:
    """A review: 60,000 views made a 16 MB answer, past what the navigator reads; the list stops
    at 1,000 with ``truncated``, as PostgreSQL's does."""
    views = "".join(f"CREATE VIEW v{n:05d} AS SELECT 1;" for n in range(1001))
    database = make_db(tmp_path / "many.db", views)
    async with Client(build_sqlite_module([database])) as many:
        listed = await ok(many, "list_tables", database="many")
    assert len(listed["tables"]) == 1000 and listed["truncated"] is True


_WIDE = ", ".join(f"c{n}" for n in range(200))


@pytest.mark.parametrize(
    ("schema", "listed", "refused_sql", "said"),
    [
        (f"CREATE TABLE wide ({_WIDE});", "wide", "SELECT * FROM wide", "at most 128 columns"),
        (
            f"CREATE VIEW v AS SELECT '{'x' * 2_000_000}' AS a;",
            "v",
            "SELECT a FROM v",
            "longer than this module's limit",
        ),
    ],
    ids=["columns", "length"],
)
async def test_a_schema_past_a_statements_bounds_leaves_its_database_usable(
    tmp_path: Path, schema: str, listed: str, refused_sql: str, said: str
) -> None:
    """Reviews: the 128-column bound (``SQLITE_LIMIT_COLUMN``) and the 1 MiB bound on a value
    (``SQLITE_LIMIT_LENGTH``) also apply to the ``CREATE`` statements SQLite parses when it
    reads a schema, so one table of 200 columns (SQLite allows 2,000), or one view of a 2 MB
    literal, made every call on its database — reads and writes, of any table — answer "the
    database file is corrupt", or that a value is too long. Statements are still bounded."""
    database = make_db(
        tmp_path / "odd.db", f"{schema} CREATE TABLE small (a); INSERT INTO small VALUES (1);"
    )
    async with Client(build_sqlite_module([database])) as odd:
        tables = (await ok(odd, "list_tables", database="odd"))["tables"]
        assert sorted(t["name"] for t in tables) == sorted(["small", listed])
        described = await ok(odd, "describe_table", database="odd", table=listed)
        assert len(described["columns"]) == (200 if listed == "wide" else 1)
        assert (await ok(odd, "query", database="odd", sql="SELECT a FROM small"))["rows"] == [[1]]
        assert (await ok(odd, "execute", database="odd", sql="INSERT INTO small VALUES (2)"))[
            "rowcount"
        ] == 1
        assert said in await refused(odd, "query", database="odd", sql=refused_sql)
    assert count(database, "small") == 2


async def test_list_tables_stops_at_the_answers_size_as_well(tmp_path: Path) -> None:
    """A review: the thousand names were not bounded in length, and a name may be as long as a
    value (1 MiB), so a thousand long names made a 1 GB answer, built in the node's memory and
    past what the navigator reads. The names stop at the answer's budget, with ``truncated``."""
    names = [f"t{n}_" + "x" * 300_000 for n in range(10)]  # 3 MB of names
    database = make_db(
        tmp_path / "long.db", "".join(f'CREATE TABLE "{name}" (a);' for name in names)
    )
    async with Client(build_sqlite_module([database])) as long:
        listed = await ok(long, "list_tables", database="long")
    assert listed["truncated"] is True
    assert 0 < len(listed["tables"]) < len(names)
    assert sum(len(t["name"]) for t in listed["tables"]) <= MAX_ANSWER_BYTES


async def test_describe_table_stops_at_the_answers_size_as_well(tmp_path: Path) -> None:
    """A review: a table's indexes had no bound, in number or in the length of their names (a
    name may be as long as a value, 1 MiB), and a caller with ``execute`` can make them: 200
    indexes made an 80 MB description, built in the node's memory for every caller who read it,
    past what the navigator reads. So did a view's columns, each named by a table's long
    column. Columns, indexes and foreign keys stop at the answer's budget, with ``truncated``."""
    long = make_db(tmp_path / "long.db", "CREATE TABLE t (a);")
    async with Client(build_sqlite_module([long])) as client:
        for n in range(10):  # 3 MB of index names
            await ok(
                client,
                "execute",
                database="long",
                sql=f'CREATE INDEX "i{n}_{"x" * 300_000}" ON t(a)',
            )
        for n in range(10):  # 3 MB of column names, one view
            await ok(
                client, "execute", database="long", sql=f'CREATE TABLE c{n} ("{n}{"y" * 300_000}")'
            )
        tables = ", ".join(f"c{n}" for n in range(10))
        await ok(client, "execute", database="long", sql=f"CREATE VIEW v AS SELECT * FROM {tables}")
        indexed = await ok(client, "describe_table", database="long", table="t")
        viewed = await ok(client, "describe_table", database="long", table="v")
    for described, listed in ((indexed, indexed["indexes"]), (viewed, viewed["columns"])):
        assert described["truncated"] is True
        assert 0 < len(listed) < 10
        assert len(json.dumps(described)) <= MAX_ANSWER_BYTES
