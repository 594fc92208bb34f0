"""The navigator's errors, and the one place they become wire answers (SPEC §9).

    NavigatorError                      code, HTTP status, a deliberate message
    ├── InvalidAddress                  invalid_address              400
    ├── InvalidArguments                invalid_arguments            400
    ├── InvalidCursor                   invalid_cursor               400
    ├── Unauthenticated                 unauthenticated              401
    ├── ToolNotGranted                  tool_not_granted             403
    ├── UnknownTool                     unknown_tool                 404
    ├── ToolGrantsChanged               tool_grants_changed          409
    ├── ContractHeld                    contract_held                409  (SPEC §14, ADR 0049)
    ├── ContractChanged                 contract_changed             409  (SPEC §14, ADR 0049)
    ├── ToolSchemaTooLarge              tool_schema_too_large        413
    ├── ConfirmationRequired            confirmation_required        428
    ├── RateLimited                     rate_limited                 429  (ADRs 0030, 0041)
    ├── NodeAnswerTooLarge              node_answer_too_large        502
    ├── NodeUnavailable                 node_unavailable             503
    ├── ToolValidationUnavailable       tool_validation_unavailable  503
    ├── GrantRowsUnusable               registry_unavailable         503  (fails closed, ADR 0009)
    ├── NavigatorStopping               navigator_stopping           503  (ADR 0030)
    ├── NodeTimeout                     node_timeout                 504
    ├── UnknownPath                     not_found                    404  (admin API only)
    ├── UnknownPrincipal                not_found                    404  (admin API only)
    ├── UnknownPage                     not_found                    404  (console only)
    ├── UnknownMethod                   not_found                    404  (MCP methods)
    ├── MethodNotAllowed                method_not_allowed           405  (admin API only)
    ├── NotPullable                     conflict                     409  (admin API only)
    ├── MachineServed                   conflict                     409  (node API: ADR 0050)
    ├── TooManyStreams                  too_many_streams             429  (console only)
    └── RegistryAnswer                  a registry error as the wire answers it (from_registry)
        ├── NotInRegistry               not_found                    404  registry.NotFound
        ├── RegistryConflict            conflict                     409  registry.Conflict
        ├── NodeReplaced                replaced                     409  registry.Replaced
        └── RegistryOutage              registry_unavailable         503  the registry's others

The registry's errors are the registry's (``registry.errors``): navigator code raises or lets
them through, and each boundary that answers a client turns them into wire answers here, in one
function (``from_registry``, ADR 0013). Every message is written here or by the code raising the
error, never formatted from a caller's arguments, a query, a schema or a storage exception: a
client sees only what we chose to say.
"""

from __future__ import annotations

from typing import Any, ClassVar

import registry
from mesh.errors import error_chain

__all__ = [
    "ERROR_META_KEY",
    "NO_ENDPOINT_MESSAGE",
    "ConfirmationRequired",
    "GrantRowsUnusable",
    "InvalidAddress",
    "InvalidArguments",
    "InvalidCursor",
    "MachineServed",
    "MethodNotAllowed",
    "NavigatorError",
    "NavigatorStopping",
    "NodeAnswerTooLarge",
    "NodeReplaced",
    "NodeTimeout",
    "NodeUnavailable",
    "NotInRegistry",
    "NotPullable",
    "RateLimited",
    "RegistryAnswer",
    "RegistryConflict",
    "RegistryOutage",
    "TooManyStreams",
    "ToolGrantsChanged",
    "ToolNotGranted",
    "ToolSchemaTooLarge",
    "ToolValidationUnavailable",
    "Unauthenticated",
    "UnknownMethod",
    "UnknownPage",
    "UnknownPath",
    "UnknownPrincipal",
    "UnknownTool",
    "error_body",
    "error_chain",
    "from_registry",
]


#: Where a walker's error answer names its code in ``_meta``, and where a node's does: the
#: navigator reads a node's refusal by it, and writes its own under it.
ERROR_META_KEY = "meshnav/error"


class NavigatorError(Exception):
    """Base of every error the navigator answers with; ``code`` and ``status`` are SPEC §9's."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    default_message: ClassVar[str] = "The navigator could not answer."

    def __init__(self, message: str | None = None, *, extra: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        #: Extra wire fields that carry no caller input (e.g. a JSON Pointer, a confirm token).
        self.extra = extra or {}
        super().__init__(self.message)


class InvalidAddress(NavigatorError):
    code = "invalid_address"
    status = 400
    default_message = (
        "The address or pattern does not parse: a tool is HOLDER/ROLE/TOOL, a prefix drops "
        "segments from the end, and a pattern puts '*' for a whole segment. seats and search "
        "answer with addresses."
    )


class InvalidArguments(NavigatorError):
    code = "invalid_arguments"
    status = 400
    default_message = "The arguments are not valid."


class InvalidCursor(NavigatorError):
    code = "invalid_cursor"
    status = 400
    default_message = "The cursor is not valid any more; start the listing again."


class Unauthenticated(NavigatorError):
    code = "unauthenticated"
    status = 401
    default_message = "Missing or invalid credentials."


class ToolNotGranted(NavigatorError):
    code = "tool_not_granted"
    status = 403
    default_message = "No grant allows this: seats and search show what you may call."


class UnknownTool(NavigatorError):
    code = "unknown_tool"
    status = 404
    default_message = "No tool you may call is at that address: search for it by what it does."


class ToolGrantsChanged(NavigatorError):
    code = "tool_grants_changed"
    status = 409
    default_message = "Grants changed while the page was prepared; ask again."


class ContractHeld(NavigatorError):
    """The tool's contract is new or changed and awaits an operator's approval (SPEC §14)."""

    code = "contract_held"
    status = 409
    default_message = (
        "This tool's contract is new or changed and awaits an operator's approval "
        "(meshnav contracts show ADDRESS); until then it is not served."
    )
    rejected_message = (
        "An operator rejected this tool's current contract; it is not served until its node "
        "serves an approved one or an operator approves it (meshnav contracts show ADDRESS)."
    )


class ContractChanged(NavigatorError):
    """The caller pinned a contract digest that is not the tool's approved one (SPEC §3)."""

    code = "contract_changed"
    status = 409
    default_message = (
        "The tool's contract is not the one you pinned: describe it again, then call with its "
        "contractDigest."
    )


class ToolSchemaTooLarge(NavigatorError):
    code = "tool_schema_too_large"
    status = 413
    default_message = "The tool's schema cannot fit in one answer."


class ConfirmationRequired(NavigatorError):
    code = "confirmation_required"
    status = 428
    default_message = "This tool changes things: call again with the confirm token."


class RateLimited(NavigatorError):
    """Past a bound of the caller's own — its quota, its node's calls in flight (ADR 0041), its
    legacy sessions (ADR 0030): not done, and ``retryAfterS`` says when one may be."""

    code = "rate_limited"
    status = 429
    default_message = "Too many calls: call again after retryAfterS seconds."

    def __init__(self, message: str | None = None, *, retry_after_s: int) -> None:
        super().__init__(message, extra={"retryAfterS": retry_after_s})


class NodeAnswerTooLarge(NavigatorError):
    code = "node_answer_too_large"
    status = 502
    default_message = "The node's answer exceeded the size limit."


class NodeUnavailable(NavigatorError):
    code = "node_unavailable"
    status = 503
    default_message = "The node that owns this tool is not answering."


#: ``node_unavailable`` for a tool registered from a tools file (SPEC §13, ADR 0057): its node is
#: not failing, there is no node to call.
NO_ENDPOINT_MESSAGE = (
    "This tool was registered from a tools file and has no endpoint, so it cannot be called: "
    "register its assignment with --url, or serve it from a node."
)


class ToolValidationUnavailable(NavigatorError):
    code = "tool_validation_unavailable"
    status = 503
    default_message = "The tool's schema cannot be checked, so it cannot be called."


class GrantRowsUnusable(NavigatorError):
    """The grant rows that may apply to a caller cannot be judged — more of them than a snapshot
    holds, or one malformed — so nothing is allowed: fail closed (ADR 0009)."""

    code = "registry_unavailable"
    status = 503
    default_message = "The registry cannot be read right now."


class NavigatorStopping(NavigatorError):
    """A new call while the navigator drains (ADR 0030): only calls are refused."""

    code = "navigator_stopping"
    status = 503
    default_message = (
        "The navigator is stopping and takes no new calls: call again after retryAfterS "
        "seconds, in a fresh MCP session (a restarted navigator knows none of the old ones)."
    )

    def __init__(self, *, retry_after_s: int) -> None:
        super().__init__(extra={"retryAfterS": retry_after_s})


class NodeTimeout(NavigatorError):
    code = "node_timeout"
    status = 504
    default_message = "The node did not answer within the deadline."


def error_body(error: NavigatorError) -> dict[str, Any]:
    """The SPEC §9 body: ``{"error", "status", "message"}`` plus any deliberate extra fields."""
    return {"error": error.code, "status": error.status, "message": error.message, **error.extra}


class UnknownPath(NavigatorError):
    """The admin API's answer for a path under ``/api/v1`` that no route serves (ADR 0013)."""

    code = "not_found"
    status = 404
    default_message = "No such API path."


class UnknownPrincipal(NavigatorError):
    """The admin API's answer for a grant row naming a principal the registry does not hold,
    unless forced (ADR 0036): the body's field is refused, with its pointer."""

    code = "not_found"
    status = 404
    default_message = "Unknown principal: the registry holds no principal of that name."


class UnknownPage(NavigatorError):
    """The console's answer for a page it does not serve: a path, or a machine or assignment
    that is not there (for a viewer who is not an operator, one with no tool of theirs)."""

    code = "not_found"
    status = 404
    default_message = "There is no console page here."


class UnknownMethod(NavigatorError):
    """The MCP answer for a method the navigator does not serve: named by nothing the client
    sent (``mesh.methods``)."""

    code = "not_found"
    status = 404
    default_message = (
        "The navigator serves no such method: tools/list lists its tools, tools/call calls them."
    )


class MethodNotAllowed(NavigatorError):
    """The admin API's answer for a path it serves, asked with a method it does not."""

    code = "method_not_allowed"
    status = 405
    default_message = "That path does not take this method."


class NotPullable(NavigatorError):
    """The admin API's answer for a refresh of an assignment whose endpoint is a node's: a node
    lists its tools to no client (ADR 0004), so a pull would read none and remove them all."""

    code = "conflict"
    status = 409
    default_message = "A node pushes its own tools, and again whenever they change."


class MachineServed(NavigatorError):
    """The node API's answer for a registration from a node instance while another instance of
    the same machine still answers at its advertised URL (SPEC §6, ADR 0050)."""

    code = "conflict"
    status = 409
    default_message = "Another node serves this machine."


class TooManyStreams(NavigatorError):
    """The console's answer for a live stream past the bound on open ones (ADR 0010)."""

    code = "too_many_streams"
    status = 429
    default_message = "Too many live console streams are open; close one and reload."


class RegistryAnswer(NavigatorError):
    """A registry error as the wire answers it, made only by ``from_registry``: the registry's
    kind of error decides the code, and its message (written by the registry) is kept."""


class NotInRegistry(RegistryAnswer):
    """A machine, assignment, seat, principal or grant the registry does not hold
    (``registry.NotFound``; the admin API's, ADR 0013)."""

    code = "not_found"
    status = 404
    default_message = "Not found."


class RegistryConflict(RegistryAnswer):
    """A change that contradicts what the registry holds (``registry.Conflict``: a duplicate
    name, a retired machine registering itself; ADR 0013)."""

    code = "conflict"
    status = 409
    default_message = "The change conflicts with what the registry holds."


class NodeReplaced(RegistryAnswer):
    """A node instance that another instance of its machine has replaced (``registry.Replaced``):
    its heartbeats, pushes and stop are refused, and it stops serving (SPEC §6, ADR 0050)."""

    code = "replaced"
    status = 409
    default_message = "Another node instance has replaced this one."


class RegistryOutage(RegistryAnswer):
    """The registry could not be read or written (``registry.RegistryUnavailable``, and any
    other registry error). Its message is always this one, or ``registry.UNWRITABLE`` for a
    write: the registry's own may name its database or the migration it needs, which are an
    operator's, not a client's."""

    code = "registry_unavailable"
    status = 503
    default_message = "The registry cannot be read right now."


def from_registry(error: registry.RegistryError) -> RegistryAnswer:
    """Translate a registry error at the boundary; a missing or conflicting thing's message was
    written by the registry."""
    if isinstance(error, registry.NotFound):
        return NotInRegistry(str(error))
    if isinstance(error, registry.Replaced):
        return NodeReplaced(str(error))
    if isinstance(error, registry.Conflict):
        return RegistryConflict(str(error))
    if isinstance(error, registry.RegistryUnavailable) and error.writes:
        return RegistryOutage(registry.UNWRITABLE)  # it may be read: a full disk, a held lock
    return RegistryOutage()
