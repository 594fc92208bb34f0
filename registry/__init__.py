"""The control plane's store: machines, seats, assignments, tools, principals, grants, revisions.

Its modules:

    database         Registry: engines, transactions, one-statement reads, migrations
    models           the tables, as SQLAlchemy typed models
    errors           the registry's errors, storage exceptions translated in one place
    reads            one-statement reads on a held SQLite connection, compiled once
    catalog          CatalogStore: changing the catalogue, each change logged
    catalog_reads    CatalogReader: reading the catalogue inside a transaction
    retired_rows     a machine held to its bounds, retired rows pruned (the store's methods)
    catalog_records  what the catalogue store takes and hands out
    catalog_rows     the whole catalogue read flat, streamed for a navigator's load
    changelog        the change log, its pruning mark, and what a navigator follows it with
    access           AccessStore: principals and grants
    access_records   what the access store and the grant reads hand out
    grant_reads      the token and grant reads every request makes
    sessions         console sessions
    audit            the audit trail's store
    audit_bounds     what the audit trail's columns take, and a refused event told apart
"""

from __future__ import annotations

from registry.access import AccessStore
from registry.access_records import (
    UNLIMITED,
    GrantRecord,
    GrantSnapshot,
    PrincipalRecord,
    Quota,
    TokenHolder,
)
from registry.catalog import CatalogStore
from registry.catalog_records import (
    AssignmentPlace,
    AssignmentRecord,
    MachineRecord,
    NewTool,
    ToolRecord,
)
from registry.catalog_rows import CatalogRow
from registry.changelog import ChangesSince, read_changes_since, read_machine_records
from registry.database import (
    HEAD_REVISION,
    Registry,
    existing_revision,
    migrate,
    ready_revision,
    shown_url,
)
from registry.errors import (
    UNWRITABLE,
    Conflict,
    NotFound,
    RegistryError,
    RegistryUnavailable,
    Replaced,
    SeatNotPlaced,
)
from registry.grant_reads import (
    read_grant_revision,
    read_snapshot,
    read_subject_holder,
    read_token_holder,
)
from registry.sessions import ConsoleSessions, SessionRecord, SessionRules, read_console_session

__all__ = [
    "HEAD_REVISION",
    "UNLIMITED",
    "UNWRITABLE",
    "AccessStore",
    "AssignmentPlace",
    "AssignmentRecord",
    "CatalogRow",
    "CatalogStore",
    "ChangesSince",
    "Conflict",
    "ConsoleSessions",
    "GrantRecord",
    "GrantSnapshot",
    "MachineRecord",
    "NewTool",
    "NotFound",
    "PrincipalRecord",
    "Quota",
    "Registry",
    "RegistryError",
    "RegistryUnavailable",
    "Replaced",
    "SeatNotPlaced",
    "SessionRecord",
    "SessionRules",
    "TokenHolder",
    "ToolRecord",
    "existing_revision",
    "migrate",
    "read_changes_since",
    "read_console_session",
    "read_grant_revision",
    "read_machine_records",
    "read_snapshot",
    "read_subject_holder",
    "read_token_holder",
    "ready_revision",
    "shown_url",
]
