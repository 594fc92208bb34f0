"""The control plane's store: machines, seats, assignments, tools, principals, grants, revisions."""

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
from registry.errors import Conflict, NotFound, RegistryError, RegistryUnavailable, SeatNotPlaced
from registry.grant_reads import (
    read_grant_revision,
    read_snapshot,
    read_subject_snapshot,
    read_token_holder,
)
from registry.sessions import ConsoleSessions, SessionRecord, SessionRules, read_console_session

__all__ = [
    "HEAD_REVISION",
    "UNLIMITED",
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
    "read_subject_snapshot",
    "read_token_holder",
    "ready_revision",
    "shown_url",
]
